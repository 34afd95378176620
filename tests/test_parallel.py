"""Parallel tool calls: the tracker under threads, and loops whose calls run on threads swept deterministically."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crashlab.job import Call
from crashlab.protocols.points import Recorder
from crashlab.world.sqlite import Database, SqliteTracker


@pytest.fixture(autouse=True)
def unpatched(monkeypatch):
    """The scheduler patches the threading primitives of the process it runs in, for good: in a killed loop's
    process that is the process's whole life. Here, in the test process, each test's patches are taken back
    after it, so that the tests that run after it in this process wait and sleep as Python does."""
    import concurrent.futures
    import concurrent.futures.thread
    import selectors
    import threading
    import time

    from crashlab.protocols import schedule

    for owner, name in ((concurrent.futures.ThreadPoolExecutor, "submit"), (concurrent.futures.thread._WorkItem, "run"),
                        (threading.Thread, "start"), (time, "sleep"), (threading.Event, "wait"),
                        (concurrent.futures.Future, "result"), (concurrent.futures.Future, "exception"),
                        (selectors.DefaultSelector, "select"), (schedule, "_patched"), (schedule, "_scheduler")):
        monkeypatch.setattr(owner, name, getattr(owner, name))


def test_the_sqlite_tracker_takes_requests_from_many_threads_at_once(tmp_path):
    """Eight threads file issues and repeat keyed ones on one tracker: each number once, each key one number.

    Before the tracker held a lock, a second thread's BEGIN inside the first's transaction failed
    (`cannot start a transaction within a transaction`)."""
    points = Recorder()
    points.start_process()
    with Database(tmp_path / "tracker.sqlite") as db:
        tracker = SqliteTracker(points, db, "keyed")

        def file(k: int) -> list[int]:
            call = Call(f"C{k}", "create_issue", {"title": f"issue {k}", "body": "b"})
            return [tracker.request(call, call.args, key=f"key-{k}") for _ in range(5)]

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(file, range(40)))
        assert all(len(set(numbers)) == 1 for numbers in answers)  # a keyed repeat is the first answer
        assert sorted(numbers[0] for numbers in answers) == list(range(1, 41))
        assert [r.number for r in tracker.records] == list(range(1, 41))
        assert len(tracker.keys()) == 40


# The schedule, in this process: a loop that runs calls on a thread pool passes its points in one order.


def pooled(labels: list[str], nested: bool = False) -> None:
    """Three calls on a pool, each passing two points, after a random spin that would reorder them."""
    import os

    import crashlab

    def spin() -> None:  # not a sleep, which the scheduler sees: a while of work the OS could preempt
        for _ in range(os.urandom(1)[0] * 200):
            pass

    def call(name: str) -> str:
        spin()
        crashlab.point(f"{name}-sent")
        spin()
        crashlab.point(f"{name}-saved")
        return name

    def node() -> list[str]:  # a task that runs its calls on a pool of its own, one worker: LangGraph's v2 tool node
        with ThreadPoolExecutor(max_workers=1) as inner:
            return list(inner.map(call, "DE"))

    crashlab.point("start")
    with ThreadPoolExecutor() as pool:
        futures = [pool.submit(call, name) for name in "ABC"]
        if nested:
            futures.append(pool.submit(node))
        labels.extend(str(f.result()) for f in futures)
    crashlab.point("end")


def scheduled(picks=(), nested=False, first=()):
    """The points one scheduled run of `pooled` passes, and the decisions it noted."""
    from crashlab.protocols.points import recording
    from crashlab.protocols.schedule import scheduling

    points, results = Recorder(), []
    points.start_process()
    with recording(points), scheduling(picks, points.note, first):
        pooled(results, nested)
    return [e.label for e in points.points()], [e.detail for e in points.events if e.kind == "schedule"]


def test_threads_on_a_pool_pass_their_points_in_one_order_and_a_schedule_replays_another():
    first, decisions = scheduled()
    assert first == ["start", "A-sent", "A-saved", "B-sent", "B-saved", "C-sent", "C-saved", "end"]
    assert all(scheduled() == (first, decisions) for _ in range(5))
    assert decisions[0]["options"] == 3 and not decisions[0]["preempts"]  # the loop's thread waits: A, B or C
    third, _ = scheduled((3,))
    assert third[:2] == ["start", "C-sent"]
    assert scheduled((3,))[0] == third
    preempted, _ = scheduled((1, 2))  # A, about to pass its first point, yields there to B
    assert preempted[:4] == ["start", "B-sent", "B-saved", "A-sent"]


def test_a_restart_s_threads_go_first_in_the_order_it_names_them():
    """A restart's schedule names threads, not options: its decisions depend on what its state left it to do."""
    backwards, decisions = scheduled(first=(3, 2, 1))
    assert backwards == ["start", "C-sent", "C-saved", "B-sent", "B-saved", "A-sent", "A-saved", "end"]
    assert scheduled(first=(3, 2, 1)) == (backwards, decisions)
    assert scheduled(first=(2,))[0][1:5] == ["B-sent", "B-saved", "A-sent", "A-saved"]  # the others as by default
    assert scheduled((3, 1), first=(2,))[0][1:3] == ["C-sent", "B-sent"]  # picks, where given, come first


def test_a_task_waiting_on_a_pool_of_one_worker_is_not_deadlocked_by_the_schedule():
    """A queued task cannot begin while its pool's one worker is busy: it is no thread to choose."""
    nested, _ = scheduled(nested=True)
    assert nested[-5:] == ["D-sent", "D-saved", "E-sent", "E-saved", "end"]
    assert all(scheduled(nested=True)[0] == nested for _ in range(3))


def scheduled_asyncio(picks=()):
    """A reply's two sync tools, each run with `asyncio.to_thread` in a task of its own, as the OpenAI Agents SDK
    runs them by default: the points passed, and the scheduler's decisions."""
    import asyncio

    import crashlab
    from crashlab.protocols.points import recording
    from crashlab.protocols.schedule import scheduling

    def tool(name: str) -> None:
        crashlab.point(f"{name}-sent")
        crashlab.point(f"{name}-saved")

    async def reply() -> None:
        crashlab.point("start")
        await asyncio.gather(*(asyncio.to_thread(tool, name) for name in "AB"))
        crashlab.point("end")

    def run() -> None:
        points.start_process()
        with recording(points), scheduling(picks, points.note):
            asyncio.run(reply())

    points = Recorder()
    runner = threading.Thread(target=run, daemon=True)  # so that a deadlock fails the test, not hangs it
    runner.start()
    runner.join(10)
    assert not runner.is_alive(), "deadlocked: the event loop's thread waited for the tools holding the baton"
    return [e.label for e in points.points()], [e.detail for e in points.events if e.kind == "schedule"]


def test_an_event_loop_waiting_on_its_tools_threads_hands_on_and_a_schedule_replays_another_order():
    """The loop's thread waits in its selector while the tools run: it hands the baton on there, so the run
    repeats itself; without that it would hold the baton while the threads it waits for wait for it."""
    first, decisions = scheduled_asyncio()
    assert first == ["start", "A-sent", "A-saved", "B-sent", "B-saved", "end"]
    assert all(scheduled_asyncio() == (first, decisions) for _ in range(5))
    assert any(d.get("options", 1) > 1 for d in decisions)
    b_first, _ = scheduled_asyncio((2,))
    assert b_first[:2] == ["start", "B-sent"] and scheduled_asyncio((2,))[0] == b_first


# Sweeps that kill for real: LangGraph's default tool node, the OpenAI Agents SDK's default concurrency, and a
# loop of yours with calls on threads.


def interleaved_sweep(setups, limit, depth=1, **options):
    """Each setup swept under the interleave fault, at most `limit` schedules, killed at every point, `depth` deaths
    a scenario."""
    from dataclasses import replace

    from crashlab.engine.sweep import sweep_all
    from crashlab.faults.interleave import Interleave
    from crashlab.protocols.fault import Faults
    from crashlab.runners import RunnerSpec

    faulted = [replace(setup, faults=Faults.of([Interleave(limit=limit)])) for setup in setups]
    return sweep_all(faulted, RunnerSpec("forked"), depth=depth, **options)


def as_json(sweep) -> str:
    """The row and every scenario's ID and outcome, as JSON: what two sweeps must agree on to the byte."""
    import json
    from dataclasses import asdict

    from crashlab.report.tables import columns_for, records

    row = sweep.row()
    scenarios = [{"id": s.id, "points": s.points, "outcome": repr(s.outcome)} for s in sweep.scenarios()]
    return json.dumps({"row": records([row], columns_for(["loop"], 1, ordered=True)), "scenarios": scenarios,
                       "counts": asdict(row)}, default=str)


def first_duplicated(sweep) -> set[tuple[str, ...]]:
    """For each schedule, the effects made twice when the first process dies as the service accepts its first
    request: which call reached the service first. More than one: the schedules really differ."""
    return {tuple(sorted(s.outcome.dups)) for s in sweep.scenarios() if s.points == ("accepted#1",)}


@pytest.mark.slow
def test_langgraph_default_parallel_tool_node_sweeps_the_same_twice_with_no_flaky_scenario(triage):
    from crashlab.loops import VARIANTS
    from crashlab.protocols.scenario import Setup

    setup = Setup(VARIANTS["langgraph-parallel"], triage)
    first, second = (interleaved_sweep([setup], 2, workers=2)[0] for _ in range(2))
    assert as_json(first) == as_json(second)
    row = first.row()
    assert row.flaky == 0 and len(first.trees) == 2
    assert row.orders.startswith("2 schedules, bounded at 2: orders not covered: ")  # bounded, and said so
    assert len(first_duplicated(first)) > 1  # another schedule sends another call first


@pytest.mark.slow
@pytest.mark.parametrize("slug", ["openai-parallel", "msagent-parallel"])
def test_an_event_loop_runtime_s_default_concurrency_sweeps_the_same_twice_with_no_flaky_scenario(triage, slug):
    """The OpenAI Agents SDK and the Microsoft Agent Framework start a reply's tools together, each sync tool on a
    thread (`asyncio.to_thread`), and their event loop waits for them: unscheduled, the sweep refuses the loop as
    not deterministic."""
    from crashlab.loops import VARIANTS
    from crashlab.protocols.scenario import Setup

    setup = Setup(VARIANTS[slug], triage)
    first, second = (interleaved_sweep([setup], 8, workers=2)[0] for _ in range(2))
    assert as_json(first) == as_json(second)
    row = first.row()
    assert row.flaky == 0 and row.dups > 0 and len(first.trees) > 1
    assert len(first_duplicated(first)) > 1  # another schedule sends another call first


@pytest.mark.slow
def test_sweep_interleavings_bounds_the_schedules_the_command_line_runs(cli):
    import json

    code, out, err = cli("sweep", "--loop", "langgraph", "--variant", "langgraph-parallel", "--fault", "interleave",
                         "--interleavings", "3", "--kill", "--depth", "1", "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["orders"].startswith("3 schedules, bounded at 3: orders not covered: ") and row["flaky"] == 0


@pytest.mark.slow
def test_a_loop_of_yours_with_calls_on_threads_sweeps_deterministically():
    from crashlab.api import loop

    from .threaded_loop import EFFECTS, parallel

    setup = loop(parallel, EFFECTS, name="threaded", scheduled=True)
    runs = [interleaved_sweep([setup], 7, share=False, repeat=2, strays_fail=False)[0] for _ in range(2)]
    assert as_json(runs[0]) == as_json(runs[1])
    row = runs[0].row()
    assert row.flaky == 0 and row.dups > 0
    assert row.orders == ("7 schedules, bounded at 7: 6 of 6 orders; not in flight: BAC, CAB, ACB, BCA, CBA; "
                          "restarts in 6 orders after 12 schedules: 7 of 72 run")
    assert len(first_duplicated(runs[0])) > 1


@pytest.mark.slow
def test_three_calls_in_flight_at_once_are_swept_and_the_restart_makes_all_three_again():
    """The loop saves each answer as it comes, and a restart makes every call it finds no answer for: a death after
    all three requests, before any answer is saved, makes A, B and C twice. Each of the six orders was swept, and
    that state never: in the schedule that reaches ABC, A saves its answer before B makes its request, and keeping
    A and then B back takes two departures from the default. The schedule of most in flight of ABC reaches it."""
    from crashlab.api import loop

    from .threaded_loop import EFFECTS, parallel

    sweep = interleaved_sweep([loop(parallel, EFFECTS, name="threaded", scheduled=True)], 7, strays_fail=False)[0]
    assert {"A": 1, "B": 1, "C": 1} in [s.outcome.dups for s in sweep.scenarios()]
    orders = sweep.row().orders
    assert orders.startswith("7 schedules, bounded at 7: 6 of 6 orders; not in flight: ") and "ABC" not in orders


@pytest.mark.slow
def test_a_restart_s_order_matters_after_a_first_process_that_left_two_calls_in_flight():
    """The loop resumes by counting its answers (`tests/counting_loop.py`). Its first process dies with B and C made
    and no answer counted (two departures from the default: the schedule of most in flight); a restart that runs B
    and then C (or C, then B) counts one answer and dies with the other made: the next makes B and C a third time.
    Neither the default first process, whatever its restarts' order, nor a restart in the default order (A first,
    and counted) after any first process, leaves B and C made three times."""
    from crashlab.api import loop

    from .counting_loop import EFFECTS, counting

    setup = loop(counting, EFFECTS, name="counting", scheduled=True, state_in_run_dir=True)
    sweep = interleaved_sweep([setup], 15, depth=2, strays_fail=False)[0]
    thrice = [s.id for s in sweep.scenarios() if {s.outcome.dups.get(c) for c in "BC"} == {2}]
    assert thrice and all("-" in s.split(":")[0] for s in thrice)  # each with its restarts in another order
    assert "restarts in 6 orders after 12 schedules: " in sweep.row().orders


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["parallel", "gathered"])  # on a pool; with asyncio.to_thread
def test_on_the_command_line_a_loop_of_yours_is_scheduled_if_it_says_so_and_refused_if_not(cli, tmp_path, entry):
    import json

    import yaml

    from .threaded_loop import EFFECTS

    effects = tmp_path / "effects.yaml"
    effects.write_text(yaml.safe_dump(EFFECTS))
    loop = ["sweep", "--loop", f"tests/threaded_loop.py:{entry}", "--effects", str(effects), "--depth", "1"]
    code, out, err = cli(*loop, "--scheduled", "--fault", "interleave", "--interleavings", "3", "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["orders"].startswith("3 schedules, bounded at 3: orders not covered: ") and row["flaky"] == 0
    assert row["dups"] > 0
    assert "--scheduled" in err  # the replay command of each window says it too
    code, out, err = cli(*loop, "--format", "json")
    assert code == 3 and "not deterministic" in err  # left to the operating system, its runs differ


@pytest.mark.parametrize("args", [("sweep", "--scheduled"), ("sweep", "--loop", "langgraph", "--scheduled"),
                                  ("explain", "keys:3", "--scheduled")])
def test_scheduled_is_refused_for_anything_but_a_loop_of_yours(cli, args):
    code, out, err = cli(*args)
    assert (code, out) == (2, "") and "--scheduled" in err and "loop of yours" in err and "Traceback" not in err


def test_a_served_loop_s_threads_passing_points_at_once_keep_the_control_line_whole():
    """An unscheduled loop's threads pass points at once. Each must have the line to the harness for its whole
    point, its frame out and the harness's word back: in CI one thread read the first bytes of another's word
    as a frame's length, and the harness was told of a frame of 2,065,852,271 bytes (``{"go``)."""
    import socket

    from crashlab.runners.served import TellingRecorder
    from crashlab.service import control

    loop_end, harness_end = socket.socketpair()
    loop_end.settimeout(5)
    recorder, heard, failed = TellingRecorder(loop_end, "s:1", 1), [], []

    def harness() -> None:
        for _ in range(8 * 100):
            heard.append(control.receive(harness_end)["label"])
            control.send(harness_end, control.GO)

    def passes(name: str) -> None:
        try:
            for k in range(100):
                recorder.hit(f"{name}{k}")
        except Exception as error:  # what a thread met is the finding
            failed.append(error)

    threads = [threading.Thread(target=harness, daemon=True)] + [
        threading.Thread(target=passes, args=(str(n),), daemon=True) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert failed == [] and sorted(heard) == sorted(f"{n}{k}" for n in range(8) for k in range(100))


def test_a_thread_that_polls_with_sleep_lets_the_task_it_waits_for_run():
    """DBOS's thread polls its database for a workflow's result, which a pool task computes: a sleep hands on."""
    import time

    import crashlab
    from crashlab.protocols.points import recording
    from crashlab.protocols.schedule import scheduling

    done: list[str] = []

    def workflow() -> None:
        crashlab.point("step")
        done.append("step")

    points = Recorder()
    points.start_process()
    with recording(points), scheduling((), points.note), ThreadPoolExecutor() as pool:
        pool.submit(workflow)
        while not done:
            time.sleep(0.001)
    assert done == ["step"] and [e.label for e in points.points()] == ["step"]


def test_a_scheduled_loop_under_a_fault_it_was_not_checked_with_is_refused_in_one_line(cli):
    """Under timeout the scheduled LangGraph agent hung on a wait the scheduler cannot see: refused, not run."""
    code, out, err = cli("sweep", "--variant", "langgraph-parallel", "--kill", "--fault", "timeout")
    assert (code, out) == (2, "") and "--fault timeout: langgraph-parallel's threads are scheduled" in err


def test_a_pool_starts_no_more_workers_than_there_are_units_of_work_and_none_for_none(monkeypatch, triage):
    """--workers 1024 started 1,042 processes for 34 units; a sweep with no first crash needs none."""
    from crashlab.engine import parallel
    from crashlab.engine.sweep import sweep_all
    from crashlab.loops import VARIANTS
    from crashlab.protocols.scenario import Setup
    from crashlab.runners import RunnerSpec

    asked: list[int] = []
    real = parallel.on_pool
    monkeypatch.setattr(parallel, "on_pool", lambda workers: asked.append(workers) or real(workers))
    swept = sweep_all([Setup(VARIANTS["after-reply"], triage)], RunnerSpec(), depth=1, workers=1024)
    assert asked and asked[0] <= swept[0].points  # a unit is one first crash or more: after-reply has 34
    assert parallel.grow_everywhere([], RunnerSpec(), 1024, None, lambda n: None) == []


@pytest.mark.slow
def test_every_order_of_three_calls_is_swept_and_the_table_says_so(cli, tmp_path):
    """Three calls at once, and a loop that resumes by counting its answers: only where A reaches the service after
    B and C (BCA, CBA) can a death leave B and C made and A not, so that the restart makes B and C again and never A.
    The schedules of one departure reach four orders of six (ABC, ACB, BAC, CAB): every one of them, swept, never
    showed it."""
    import yaml

    from .counting_loop import EFFECTS

    effects = tmp_path / "effects.yaml"
    effects.write_text(yaml.safe_dump(EFFECTS))
    loop = ["sweep", "--loop", "tests/counting_loop.py:counting", "--effects", str(effects), "--depth", "1",
            "--scheduled", "--fault", "interleave"]
    code, out, err = cli(*loop, "--interleavings", "all")
    assert code == 0, err
    assert "6 of 6 orders, 6 of 6 in flight, restarts in 6 of 6 after each of 12, 81 schedules" in out
    assert "B made again, C made again, A lost" in err  # a cause: what a death adds
    code, out, err = cli(*loop, "--interleavings", "3")
    assert ("3 schedules, bounded at 3: orders not covered: ACB, BCA, CBA; not in flight: ABC, BAC, CAB, ACB, BCA, "
            "CBA; restarts in 6 orders after 12 schedules: 3 of 72 run") in out
    assert "A lost" in err and "B made again, C made again, A lost" not in err


@pytest.mark.slow
def test_a_restart_runs_its_threads_in_the_order_its_scenario_names(cli, tmp_path):
    """``-2.3.1``: every restart runs its second thread first while it can, then its third, then its first. The first
    process dies before anything is made; its restart makes B and C and dies before A: the next counts two answers,
    skips A and B, and makes C again. A restart in the default order makes A first, and never loses it so."""
    import yaml

    from .counting_loop import EFFECTS

    effects = tmp_path / "effects.yaml"
    effects.write_text(yaml.safe_dump(EFFECTS))
    loop = ["--loop", "tests/counting_loop.py:counting", "--effects", str(effects), "--scheduled"]
    code, out, err = cli("explain", "counting+interleave=1-2.3.1:1:7", *loop)
    assert code == 0, err
    assert "missing:       A" in out and "C ×2" in out
    restart = out[out.index("process 2 (restart)"):out.index("process 3 (restart)")]
    assert restart.index("Export times out") < restart.index("Dark mode is unreadable")  # B, then C
    code, out, err = cli("explain", "counting+interleave=1-2.2:1:7", *loop)
    assert code == 2 and "each once" in err and "Traceback" not in err


def reply(shape, picks):
    """A reply of calls on a pool, each passing `before` points, making its request, then passing `after` points
    (`shape`: one (before, after) per call, named A, B, ...), run in this process under the schedule `picks`: the
    story it tells."""
    import crashlab
    from crashlab.protocols.points import recording
    from crashlab.protocols.schedule import scheduling

    points = Recorder()
    points.start_process()

    def call(name: str, before: int, after: int) -> None:
        for k in range(before):
            crashlab.point(f"{name}-before-{k}")
        points.note("request", "create_issue", call=name)
        for k in range(after):
            crashlab.point(f"{name}-after-{k}")

    with recording(points), scheduling(picks, points.note):
        crashlab.point("start")
        with ThreadPoolExecutor(max_workers=len(shape)) as pool:
            for future in [pool.submit(call, "ABCD"[k], *counts) for k, counts in enumerate(shape)]:
                future.result()
    return points


def requests_at_once(shape, picks, told=None):
    """What the search reads of `reply`'s run. `told`, if given, gets what happened, in order: each point, and
    ``A!`` for each request."""
    from crashlab.faults.orders import ran

    events = reply(shape, picks).events
    if told is not None:
        told.extend(f"{e.detail['call']}!" if e.kind == "request" else e.label for e in events
                    if e.kind in ("request", "point"))
    return ran(events, ["request"])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=3))
def test_the_search_reaches_every_order_of_calls_made_at_once(shape):
    """Unbounded, the orders the search reaches are every permutation of the calls: none is left to chance."""
    from itertools import permutations

    from crashlab.faults.orders import search

    found = search(lambda picks: requests_at_once(shape, picks), 10_000)
    assert set(found.orders) == set(permutations("ABCD"[:len(shape)]))
    assert found.orders[tuple("ABCD"[:len(shape)])] == ()  # the default schedule reaches submission order


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=3))
def test_for_each_order_a_schedule_has_every_call_in_flight_before_any_goes_on_past_its_request(shape):
    """The schedule of an order need not leave every state of it: there A passes its points after its request before B
    makes its own. For each order the search also makes the schedule of most in flight: every request of the order
    is made, in that order, before any call passes a point after its request."""
    from crashlab.faults.orders import crowded, search

    def run(picks, told=None):
        return requests_at_once(shape, picks, told)

    found = search(run, 10_000)
    for order, schedule in found.orders.items():
        told: list[str] = []
        assert run(crowded(run, schedule, run(schedule)), told).order == order
        assert not [label for label in told[:told.index(f"{order[-1]}!")] if "-after-" in label], told


def test_the_default_schedule_saves_a_call_s_result_before_the_next_request_and_the_crowded_one_does_not():
    """Three calls that each pass a point after their request: by default A passes it before B's request (so no death
    leaves A and B in flight at once); the schedule of most in flight makes B's and C's requests first."""
    from crashlab.faults.orders import crowded

    def run(picks, told=None):
        return requests_at_once([(0, 1)] * 3, picks, told)

    default: list[str] = []
    run((), default)
    assert default.index("A-after-0") < default.index("B!")
    crowd: list[str] = []
    run(crowded(run, (), run(())), crowd)
    assert crowd[:4] == ["start", "A!", "B!", "C!"]


def test_the_bound_on_schedules_is_a_bound_and_the_table_says_what_it_left_out():
    """Three calls at once, swept under the fault at bounds from 1 to past every schedule there is: it runs as many as
    the bound lets it, never more; below every schedule of the orders and their restarts' orders the column says
    bounded, and which; at `all` it runs every one and says so."""
    from types import SimpleNamespace

    from crashlab.faults.interleave import Interleave
    from crashlab.protocols.fault import Faults

    shape = [(0, 1)] * 3
    scheduled = SimpleNamespace(variant=SimpleNamespace(scheduled=True, slug="reply", service=()),
                                job=SimpleNamespace(calls=()))
    without = SimpleNamespace(setup=scheduled, first=SimpleNamespace(points=reply(shape, ())),
                              rerun=lambda faults: SimpleNamespace(points=reply(shape, faults.members[0].schedule(1)[0])))

    def swept(limit):
        faults = list(Interleave(limit=limit).variations(without))
        trees = [SimpleNamespace(faults=Faults.of([f])) for f in faults]
        return faults, Interleave(limit=limit).explored(SimpleNamespace(trees=trees))

    every, said = swept(None)
    there = every[0].there
    assert len(every) == there == len({f.value for f in every})
    assert said == f"6 of 6 orders, 6 of 6 in flight, restarts in 6 of 6 after each of 12, {there} schedules"
    for limit in (1, 2, 6, 7, 12, 13, 71, 72, 73, there - 1, there, there + 1):
        faults, said = swept(limit)
        assert [f.value for f in faults] == [f.value for f in every][:limit]
        if limit < 6 + 6 + 12 * 5:  # the orders, of most in flight, and each with its restarts in 5 other orders
            assert said.startswith(f"{limit} schedules, bounded at {limit}: "), said
        else:
            assert said.startswith("6 of 6 orders, 6 of 6 in flight, restarts in 6 of 6 after each of 12, "), said
            assert said.endswith(f", {min(limit, there)}{f' of {there}' if limit < there else ''} schedules"), said
    assert swept(2)[1] == ("2 schedules, bounded at 2: orders not covered: CAB, ACB, BCA, CBA; not in flight: ABC, BAC, "
                           "CAB, ACB, BCA, CBA; restarts in 6 orders after 12 schedules: 2 of 72 run")


def test_a_search_that_finds_ever_more_schedules_is_refused_in_one_line():
    """A run that always shows one more decision where another thread could have made its request first: past its
    bound the search stops with one line, and does not run for ever."""
    from crashlab.errors import BadInput
    from crashlab.faults.orders import Ran, search

    def run(picks):
        decisions = len(picks) + 1
        return Ran((*picks, 1), ((1, 2),) * decisions, ((decisions, 1, "A"), (decisions, 2, "B")))

    with pytest.raises(BadInput, match=r"ran 5 schedules and found more to try: too many calls at once"):
        search(run, 5)
