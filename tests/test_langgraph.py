"""The job as a LangGraph ReAct agent, killed for real at every point: plain tools duplicate, keyed ones cannot.

These need the `crashlab[langgraph]` extra, which `make test` installs. A plain agent must duplicate
exactly where a kill falls between a tool's commit in the tracker and LangGraph's saving of that
tool's result (`put_writes`), and lose nothing; the same agent sending a key made of LangGraph's own
thread and tool-call IDs must have no duplicate and lose nothing in any scenario.
"""

import json

import pytest

from crashlab.durable.fuse import unusable
from crashlab.job.reader import parse_job

from .helpers import same_sweep, sweep_family

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept(triage):
    return {sweep.name: sweep for sweep in sweep_family("langgraph", triage)}


@pytest.mark.parametrize("slug", ["langgraph-plain", "langgraph-v1", "langgraph-subgraph"])
def test_a_plain_agent_duplicates_only_between_the_commit_and_the_save_of_the_tool_result(swept, slug):
    """Tool node v2 saves each call's result on its own, v1 the reply's together: the same windows, other points.
    As a subgraph, its results are saved under the subgraph's namespace, and a restart reuses them there too
    (LangGraph #6792 reported a resumed subgraph re-running its earlier tasks)."""
    plain = swept[slug]
    assert len(plain.points) == len(plain.scenarios) > 30 and plain.flaky == 0
    steps, step = [], None  # each tool step: from its first tracker commit to the next model call
    for k, point in enumerate(plain.points):
        if point.startswith("accepted#") and step is None:
            step = [k]
        elif point.startswith("model-asked#") and step is not None:
            steps.append(range(step[0], k))
            step = None
    assert len(steps) == 2  # the job's two replies that change the tracker
    for k, scenario in enumerate(plain.scenarios):
        if not any(k in r for r in steps):
            assert scenario.outcome.extra == 0, scenario.id  # no commit whose result LangGraph had not saved
    for r in steps:
        saved = max(k for k in r if plain.points[k].startswith("put-writes-done#"))
        assert plain.scenarios[r[0]].outcome.extra > 0 and plain.scenarios[saved].outcome.extra == 0  # commit: dup
    assert plain.missing == 0


def test_keyed_with_the_thread_and_tool_call_id_no_kill_duplicates_or_loses_anything(swept):
    keyed = swept["langgraph-keyed"]
    assert keyed.points == swept["langgraph-plain"].points and keyed.flaky == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_saving_only_at_exit_redoes_every_committed_call_until_the_graph_returns(swept):
    exit_ = swept["langgraph-exit"]
    first = exit_.points.index("accepted#1")
    last = len(exit_.points) - 1  # the final put-done: the graph's only save is durable, nothing reruns
    assert [s.outcome.extra > 0 for s in exit_.scenarios] == [first <= k < last for k in range(len(exit_.points))]
    assert exit_.dups > swept["langgraph-plain"].dups and exit_.missing == 0


def test_sweep_loop_langgraph_needs_kill_and_prints_every_row(cli):
    code, out, err = cli("sweep", "--loop", "langgraph")
    assert (code, out) == (2, "") and "langgraph-plain runs only under the forked runner (--kill)" in err
    code, out, err = cli("sweep", "--loop", "langgraph", "--kill", "--depth", "1", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and set(rows) == {"langgraph-plain", "langgraph-keyed", "langgraph-v1", "langgraph-exit",
                                       "langgraph-parallel", "langgraph-subgraph"}
    keyed = rows["langgraph-keyed"]
    assert rows["langgraph-plain"]["dups"] > 0 and keyed["dups"] == keyed["missing"] == 0


def test_explain_kills_a_langgraph_scenario_again_and_tells_it(cli):
    code, out, err = cli("explain", "langgraph-plain:14")
    assert code == 0 and "CRASH at point 14 (accepted): process 1 dies here" in out
    assert "duplicates:    A ×2, B ×2 (DUPLICATED)" in out and "missing:       none" in out
    code, out, err = cli("explain", "langgraph-plain:14", "--format", "json")
    first, restart = json.loads(out)["processes"]
    assert first["made"] == ["issue #1 (A) with no key", "issue #2 (B) with no key"]
    assert restart["found"].startswith("graph.sqlite ") and restart["held"] == ["issue #1 (A)", "issue #2 (B)"]
    assert restart["ended"] == "exit status 0: the loop returned"
    code, out, err = cli("explain", "langgraph-nope:1")
    assert (code, out) == (2, "") and "unknown variant 'langgraph-nope' (valid: " in err and "langgraph-plain," in err


@pytest.mark.skipif(bool(unusable()), reason=f"FUSE is not usable here: {unusable()}")
def test_a_power_cut_of_its_run_directory_takes_nothing_langgraph_committed(swept, triage):
    """SqliteSaver runs its database in WAL, whose synchronous is FULL in this SQLite by default: every checkpoint it
    committed was synced, so every state a cut leaves at a point (each a scenario of its own) comes to what the kill
    there comes to."""
    from crashlab.faults.power_cut import PowerCut

    (cut,) = sweep_family("langgraph", triage, faults=[PowerCut.configured()], slugs={"langgraph-plain"})
    killed = {s.crashes: s.outcome for s in swept[cut.name].scenarios if len(s.crashes) == 1}
    assert cut.points == swept[cut.name].points
    assert {s.crashes for s in cut.scenarios} == set(killed)
    assert all(s.outcome == killed[s.crashes] for s in cut.scenarios)


def test_shared_a_langgraph_sweep_is_the_re_executed_one_scenario_by_scenario(swept, triage):
    """Every row restarted from copies of the run directory and the service's rows, taken with the process
    stopped where its death would be: what re-executing every process from nothing gives."""
    for shared in sweep_family("langgraph", triage, share=True):
        same_sweep(shared, swept[shared.name])


def test_shared_to_depth_two_the_parallel_tool_node_is_the_re_executed_one():
    """Two calls of one reply on LangGraph's default tool node, their threads taking turns, and a restart's
    points stopped at too: to depth 2, scenario by scenario, what re-execution gives."""
    job = parse_job({"name": "two-at-once", "turns": [
        {"calls": [{"id": "A", "tool": "create_issue", "args": {"title": "a", "body": "b"}},
                   {"id": "B", "tool": "create_issue", "args": {"title": "c", "body": "d"}}]},
        {"answer": "done"}]})
    shared, replayed = (sweep_family("langgraph", job, depth=2, slugs={"langgraph-parallel"}, share=share)[0]
                        for share in (True, False))
    assert replayed.sweep.row().twice > 100
    same_sweep(shared, replayed)


def test_a_hand_built_graph_with_an_approval_interrupt_restarts_from_copies_as_it_would_after_its_deaths(cli):
    """examples/langgraph_approval.py, a loop of yours: files A, stops for a person's approval of B, files B and
    comments on A. Plain, a death between a node's request and LangGraph's save of its write runs the node again;
    keyed by thread and node, never. Restarted from copies (`--state-in-run-dir`, checked first), every count is
    what re-executing every scenario gives."""
    loop = ["--loop", "examples/langgraph_approval.py:plain,keyed", "--effects", "examples/langgraph_approval.yaml",
            "--state-in-run-dir", "--depth", "1", "--format", "json"]
    code, shared, _ = cli("sweep", *loop)
    again, replayed, _ = cli("sweep", *loop, "--no-share")
    assert code == again == 0
    plain, keyed = json.loads(shared)
    assert plain["dups"] > 0 and keyed["dups"] == 0 and plain["missing"] == keyed["missing"] == 0
    assert keyed["distinct"] < keyed["scenarios"]
    assert [plain, keyed] == json.loads(replayed)
