"""The job as a LangGraph ReAct agent, killed for real at every point: plain tools duplicate, keyed ones cannot.

These need the `crashlab[langgraph]` extra, which `make test` installs. A plain agent must duplicate
exactly where a kill falls between a tool's commit in the tracker and LangGraph's saving of that
tool's result (`put_writes`), and lose nothing; the same agent sending a key made of LangGraph's own
thread and tool-call IDs must have no duplicate and lose nothing in any scenario.
"""

import json

import pytest

from crashlab.langgraph_agent import sweep_variants

pytestmark = pytest.mark.slow


def test_a_plain_langgraph_agent_duplicates_between_the_commit_and_put_writes_and_a_keyed_one_never(triage):
    plain, keyed = sweep_variants(triage)
    assert plain.points == keyed.points and len(plain.points) == len(plain.scenarios) > 30
    assert plain.flaky == keyed.flaky == []
    steps, step = [], None  # each tool step: from its first tracker commit to the next model call
    for k, point in enumerate(plain.points):
        if point.startswith("accepted#") and step is None:
            step = [k]
        elif point.startswith("model-asked#") and step is not None:
            steps.append(range(step[0], k))
            step = None
    assert len(steps) == 2  # the job's two replies that change the tracker
    for k, scenario in enumerate(plain.scenarios):
        inside = next((r for r in steps if k in r), None)
        if inside is None:
            assert scenario.dups == 0, scenario.story()  # no commit whose result LangGraph had not saved
    for r in steps:
        saved = max(k for k in r if plain.points[k].startswith("put-writes-done#"))
        assert plain.scenarios[r[0]].dups > 0 and plain.scenarios[saved].dups == 0  # commit: dup; all saved: none
    assert plain.missing == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_sweep_loop_langgraph_needs_kill_and_prints_both_rows(cli):
    code, out, err = cli("sweep", "--loop", "langgraph")
    assert (code, out) == (2, "") and "--loop langgraph needs --kill" in err
    code, out, err = cli("sweep", "--loop", "langgraph", "--kill", "--depth", "1", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and set(rows) == {"langgraph-plain", "langgraph-keyed"}
    keyed = rows["langgraph-keyed"]
    assert rows["langgraph-plain"]["dups"] > 0 and keyed["dups"] == keyed["missing"] == 0
