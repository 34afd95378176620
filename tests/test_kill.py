"""Real deaths: a sweep whose every process is an OS process that SIGKILLs itself gives the in-process table.

The forked runner (`crashlab.runners.forked`) forks each process of a scenario, lets it run against a world in SQLite
and a checkpoint file, and kills it at its crash point; the parent reads every count from the files
afterwards. Held against the in-process sweep (re-executed, the oracle) scenario by scenario: a
difference is a bug in one of the two.
"""

import os
import signal

import pytest
from hypothesis import given, settings

from crashlab.engine.sweep import sweep
from crashlab.errors import Stray
from crashlab.job import load_job
from crashlab.loops import VARIANTS, yours
from crashlab.loops.designs import DESIGNS, DesignLoop
from crashlab.protocols.fault import parse_tags
from crashlab.protocols.points import HarnessError
from crashlab.protocols.scenario import Setup
from crashlab.runners import RunnerSpec
from crashlab.runners import forked as kill
from crashlab.world import TRACKER_MODES

from .conftest import SCENARIOS
from .helpers import results
from .strategies import jobs
from .test_hostile_loops import (
    AFTER_REPLY,
    FakesItsCrash,
    MutatesInPlace,
    NeverFinishes,
    ReturnsAfterItsCrash,
    SavesInFinally,
    SwallowsItsCrash,
    hostile,
)

KILLED = RunnerSpec("forked", "files")
IN_PROCESS = RunnerSpec("in-process", "files")


def scenarios(variant, job, depth=2, killed=True, share=False):
    """Every scenario's (ID, points, outcome, hits, saves), killed for real or in process, and the row."""
    swept = sweep(Setup(variant, job), KILLED if killed else IN_PROCESS, depth, share=share)
    return results(swept), swept.row()


def run_scenario(variant, job, crashes, spec=KILLED):
    """One scenario re-executed from nothing: each process forked and SIGKILLed (or, in process, a Crash)."""
    with spec.open() as runner:
        return runner.scenario(Setup(variant, job), crashes)


@pytest.mark.parametrize("slug", ["after-reply", pytest.param("agent-keyless", marks=pytest.mark.slow)])
def test_a_killed_sweep_is_the_in_process_sweep_scenario_by_scenario(triage, slug):
    assert scenarios(VARIANTS[slug], triage, depth=1) == scenarios(VARIANTS[slug], triage, depth=1, killed=False)


@pytest.mark.slow
def test_a_killed_approval_job_counts_its_approvals_from_the_database():
    approval = load_job(SCENARIOS / "approval.yaml")
    killed, row = scenarios(VARIANTS["agent-keyed"], approval, depth=1)
    assert (killed, row) == scenarios(VARIANTS["agent-keyed"], approval, depth=1, killed=False)
    assert row.approvals > 0  # the remembering desk's questions, counted in the database


def test_each_process_of_a_scenario_is_killed_at_its_own_point(triage):
    run = run_scenario(AFTER_REPLY, triage, (6, 3))
    in_process = run_scenario(AFTER_REPLY, triage, (6, 3), RunnerSpec("in-process"))
    crashes = [(e.process, e.index, e.label) for e in run.points.crashes()]
    assert crashes == [(e.process, e.index, e.label) for e in in_process.points.crashes()]
    assert [(p, i) for p, i, _ in crashes] == [(1, 6), (2, 3)]
    assert run.final.finished and run.start == in_process.start


@pytest.mark.parametrize(
    "loop_class",
    [ReturnsAfterItsCrash, *(pytest.param(h, marks=pytest.mark.slow) for h in (SwallowsItsCrash, MutatesInPlace))],
)
def test_what_a_dying_loop_would_still_do_never_runs_under_sigkill(triage, loop_class):
    """No handler and no in-place edit of a dead process counts: the killed table is the honest one."""
    killed, _ = scenarios(hostile("h", loop_class), triage, depth=1)
    assert [s[1:] for s in killed] == [s[1:] for s in scenarios(AFTER_REPLY, triage, depth=1, killed=False)[0]]


def test_a_save_in_finally_never_runs_at_a_sigkill_but_clobbers_the_run_when_it_returns(triage):
    """Killed at its last point, it never saves; its restart finds the run finished, returns, and its finally
    overwrites the finished checkpoint with an empty one: a bug of the loop's own, which the harness names."""
    with KILLED.open() as runner:
        for i in (6, 33):
            assert runner.scenario(Setup(hostile("finally", SavesInFinally), triage), (i,)).final.finished
        with pytest.raises(HarnessError, match=r"^finally:34: process 2 returned, but the run is not finished "
                                               r"\(the durable checkpoint: empty\)"):
            runner.scenario(Setup(hostile("finally", SavesInFinally), triage), (34,))


class NondeterministicAcrossProcesses(DesignLoop):
    """`Nondeterministic`, with a coin no fork can copy (a forked child inherits the parent's random state)."""

    def resume(self):
        if os.urandom(1)[0] < 128:
            self.save()
        super().resume()


def test_a_nondeterministic_loop_is_reported_under_sigkill_too(triage):
    with pytest.raises(Stray, match="the loop is not deterministic"):
        sweep(Setup(hostile("nondeterministic", NondeterministicAcrossProcesses), triage), KILLED, 1, share=False)


def test_a_killed_loop_that_never_finishes_or_never_reaches_its_point_fails_its_scenario(triage):
    with KILLED.open() as runner:
        with pytest.raises(HarnessError, match=r"^never: process 1 returned, but the run is not finished"):
            runner.scenario(Setup(hostile("never", NeverFinishes), triage), ())
        with pytest.raises(HarnessError, match=r"after-reply:6:999: process 2 finished after \d+ crash points and "
                                               r"never reached its crash point 999"):
            runner.scenario(Setup(AFTER_REPLY, triage), (6, 999))


def test_an_error_in_a_killed_process_fails_its_scenario_naming_it(triage):
    with pytest.raises(HarnessError, match=r"^fakes:3: process 1 failed: Crash: crash at point "
                                           r"1 \(temp\) \(test_hostile_loops.py:\d+\)"):
        run_scenario(hostile("fakes", FakesItsCrash), triage, (3,))


def test_a_process_killed_by_something_else_fails_its_scenario(triage, monkeypatch):
    """A death the harness did not ask for (the OOM killer, a user's kill -9) is not counted as a crash."""
    monkeypatch.setattr(kill, "_child", lambda *args: signal.raise_signal(signal.SIGKILL))
    unasked = r"^after-reply:4: process 1 ended .* without a word"
    with pytest.raises(HarnessError, match=unasked):
        run_scenario(AFTER_REPLY, triage, (4,))


@pytest.mark.slow
def test_a_real_death_brings_its_own_files(triage):
    """No store of the caller's outlives a real death: the forked runner keeps each scenario in files of its
    own, whatever store is asked for."""
    with RunnerSpec("forked", "memory").open() as runner:
        run = runner.scenario(Setup(AFTER_REPLY, triage), (6,))
        assert run.store.path.is_file() and run.final.finished  # a checkpoint file the killed processes wrote


def test_what_a_runtime_keeps_in_a_subdirectory_is_part_of_its_state(triage, tmp_path):
    """The Microsoft Agent Framework keeps its checkpoints in checkpoints/, Prefect its results in prefect/: two
    states that differ only there are two states. The world's database is the world's, not the loop's."""
    setup = Setup(VARIANTS["msagent-plain"], triage)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "superstep-1.json").write_text("{}")
    (tmp_path / "tracker.sqlite").write_text("")
    kept = kill.files_of(tmp_path, setup)
    assert [(name, data) for name, _, data in kept] == [(".", b""), ("checkpoints", b""),
                                                        ("checkpoints/superstep-1.json", b"{}")]


def test_a_killed_sweep_restarts_each_state_once_from_a_copy_and_is_the_replayed_one(triage, monkeypatch):
    """Shared, the forked runner stops the process at each point and copies its run directory, and each
    distinct state is restarted once from its copy (and, after a first death, once more, to see that the loop
    repeats itself): two processes per state at depth 1, not one per scenario, and scenario by scenario what
    re-executing every process from nothing gives."""
    processes = []
    counted = kill.forked
    monkeypatch.setattr(kill, "forked", lambda *args: processes.append(args) or counted(*args))
    shared = scenarios(AFTER_REPLY, triage, depth=1, share=True)
    restarts = len(processes) - 2  # after the uninterrupted run, twice
    processes.clear()
    replayed = scenarios(AFTER_REPLY, triage, depth=1)
    assert shared == replayed
    assert restarts == 2 * shared[1].distinct == 2 * shared[1].repeated and shared[1].distinct < shared[1].scenarios
    assert len(processes) == 2 + 2 * shared[1].scenarios  # each scenario re-executed: its death, its restart


def test_only_loops_that_keep_all_in_their_directory_share_restarts_when_killed_and_only_under_the_crash(triage):
    """A copy of the run directory (and of the service's file) is all a death leaves only for a loop that keeps
    nothing elsewhere: crashlab's own, and the runtimes checked to (by the slow suite's shared and re-executed
    sweeps agreeing). A loop of yours may keep state anywhere, and a fault's states are more than a copy:
    each of those is re-executed, every scenario."""
    shared = {slug for slug, variant in VARIANTS.items() if KILLED.shares(Setup(variant, triage))}
    assert shared == {slug for slug, variant in VARIANTS.items()
                      if variant.family in ("designs", "agent", "langgraph", "dbos", "openai", "llamaindex",
                                            "pydanticai")}
    assert not KILLED.shares(Setup(AFTER_REPLY, triage, parse_tags("+timeout")))
    assert not KILLED.shares(yours.setup(lambda run: None, ["A"]))


@pytest.mark.slow
def test_sweep_kill_prints_the_in_process_table(cli):
    args = ("sweep", "--variant", "keys", "--depth", "1", "--format", "json")
    killed = cli(*args, "--kill", "--workers", "2")
    assert killed[0] == 0 and killed == cli(*args)


def test_sweep_kill_refuses_the_memory_store(cli):
    code, out, err = cli("sweep", "--kill", "--store", "memory")
    assert (code, out) == (2, "") and "--kill needs --store files: a memory store cannot outlive a real death" in err


BOOK = [pytest.param(slug, marks=pytest.mark.slow) for slug in DESIGNS]


@pytest.mark.parametrize("slug", BOOK)
def test_the_book_table_killed_for_real_is_the_in_process_table_re_executed_or_shared(triage, slug):
    killed = scenarios(VARIANTS[slug], triage)
    assert killed == scenarios(VARIANTS[slug], triage, killed=False)
    assert killed == scenarios(VARIANTS[slug], triage, share=True)  # restarted from copies of the run directory


AGENT_JOBS = [
    pytest.param(name, mode, marks=pytest.mark.slow)
    for name in ("triage", "approval", "server-dies") for mode in TRACKER_MODES
]


@pytest.mark.parametrize("name, mode", AGENT_JOBS)
def test_the_agent_table_killed_for_real_is_the_in_process_table_re_executed_or_shared(name, mode):
    """Shared to depth 2; re-executed, every process from nothing, to depth 2 on the triage job and to depth 1 on the
    harder ones, whose depth 2 re-executed took two minutes each, a third of the slow suite's time."""
    job, variant = load_job(SCENARIOS / f"{name}.yaml"), VARIANTS[f"agent-{mode}"]
    assert scenarios(variant, job, share=True) == scenarios(variant, job, killed=False)
    depth = 2 if name == "triage" else 1
    assert scenarios(variant, job, depth=depth) == scenarios(variant, job, depth=depth, killed=False)


@pytest.mark.slow
@settings(max_examples=8)
@given(jobs(max_turns=2, max_calls=2, harder=True))
def test_on_any_job_a_killed_sweep_re_executed_or_shared_is_the_in_process_sweep(job):
    """Shared to depth 2, re-executed to depth 1 (to depth 2 it took ten minutes on one core)."""
    for variant in (VARIANTS["keys-markers"], VARIANTS["agent-lookup"]):
        if variant.refuses(job) is None:
            assert scenarios(variant, job, share=True) == scenarios(variant, job, killed=False)
            assert scenarios(variant, job, depth=1) == scenarios(variant, job, depth=1, killed=False)
