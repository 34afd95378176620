"""The job as an OpenAI Agents SDK agent, killed for real at every point: plain tools duplicate, keyed ones cannot.

These need the `crashlab[openai]` extra. The runner writes a reply's calls and their outputs to the
`SQLiteSession` in one `add_items` after the reply's tools ran, and a restart continues the
session's conversation: a plain agent must duplicate exactly where a kill falls between a tool's
commit in the tracker and that write, and lose nothing; sending a key made of the session ID and the
tool-call ID, nothing may duplicate or go missing. Under the human-in-the-loop flow the restart
resumes from the `RunState` stored at the last pause, so the window closes only at the next pause's
state write, whatever the session already holds.
"""

import json

import pytest

from .helpers import same_sweep, sweep_family

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept(triage):
    return {sweep.name: sweep for sweep in sweep_family("openai", triage)}


def windows(points, closes):
    """The indexes from each reply's first tracker commit up to (not including) the next point named `closes`."""
    inside, open_ = set(), False
    for k, point in enumerate(points):
        if point.startswith("accepted#"):
            open_ = True
        elif point.startswith(f"{closes}#") and open_:
            open_ = False
        if open_:
            inside.add(k)
    return inside


def test_a_plain_agent_duplicates_only_between_the_commit_and_the_session_write(swept, triage):
    plain = swept["openai-plain"]
    assert len(plain.points) == len(plain.scenarios) > 10 and plain.flaky == 0
    window = windows(plain.points, "add-items-done")
    assert len(window) == 5  # accepted#1, accepted#2, add-items#2; accepted#3, add-items#3
    assert [s.outcome.extra > 0 for s in plain.scenarios] == [k in window for k in range(len(plain.points))]
    assert plain.dups == 7 and plain.missing == 0  # A; A and B twice; C
    assert {c.id for c in triage.changing_calls} == {"A", "B", "C"}


def test_keyed_with_the_session_and_tool_call_id_no_kill_duplicates_or_loses_anything(swept):
    keyed = swept["openai-keyed"]
    assert keyed.points == swept["openai-plain"].points and keyed.flaky == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_resuming_the_stored_run_state_redoes_every_approved_call_until_the_next_pause_is_stored(swept):
    """The session holds A's and B's outputs from add-items-done#3 on, but the restart resumes the state stored
    at the first pause and runs them again; the last reply's window never closes (no pause comes after it)."""
    approve = swept["openai-approve"]
    points = approve.points
    assert approve.flaky == 0 and approve.missing == 0
    first, stored, last = points.index("accepted#1"), points.index("state-saved#2"), points.index("accepted#3")
    assert [s.outcome.extra > 0 for s in approve.scenarios] == [
        first <= k < stored or k >= last for k in range(len(points))]
    assert approve.scenarios[points.index("add-items-done#3")].outcome.extra == 2  # recorded in the session: still twice
    assert approve.dups > swept["openai-plain"].dups


def test_explain_kills_the_approved_run_before_its_outputs_reach_the_session_and_tells_it(cli):
    """openai-approve:11 dies at the resumed turn's session write: the session holds A's and B's calls and no
    output (openai-agents issue #4615's state); the restart runs both again from the stored state."""
    code, out, _ = cli("explain", "openai-approve:11")
    assert code == 0 and "CRASH at point 11 (add-items): process 1 dies here" in out
    assert "duplicates:    A ×2, B ×2 (DUPLICATED)" in out and "missing:       none" in out


def test_points_lists_where_a_runtime_s_search_falls_too(cli):
    """The job's search reaches the service as a request that changes nothing; `points` failed on it (KeyError)
    for every runtime's row until the service said so."""
    code, out, err = cli("points", "openai-plain", "--format", "json")
    assert code == 0, err
    rows = {(row["label"], row["occurrence"]): row for row in json.loads(out)}
    assert rows["accepted", 3]["tracker"] == ["issue #1 (A)", "issue #2 (B)", "comment #1 on #1 (C)"]


def test_points_tells_what_a_runtime_s_run_directory_holds_at_each_point(cli):
    """A runtime keeps no crashlab checkpoint: what is on disk at a point is its own files, copied with the
    process stopped there ("nothing" at every point, until this said so)."""
    code, out, _ = cli("points", "openai-plain", "--format", "json")
    kept = [row["checkpoint"] for row in json.loads(out)]
    assert code == 0 and all("session.sqlite" in files for files in kept[1:]), kept
    assert len(set(kept)) > 2  # the session grows as the run goes


def test_sweep_loop_openai_needs_kill(cli):
    code, out, err = cli("sweep", "--loop", "openai")
    assert (code, out) == (2, "") and "openai-plain runs only under the forked runner (--kill)" in err


def test_shared_a_openai_sweep_is_the_re_executed_one_scenario_by_scenario(swept, triage):
    """Restarted from copies of the run directory and the service's rows, taken with the process stopped where
    its death would be: what re-executing every process from nothing gives, for every row."""
    for shared in sweep_family("openai", triage, share=True):
        same_sweep(shared, swept[shared.name])
