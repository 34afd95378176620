"""The job as a LlamaIndex FunctionAgent, killed for real at every point: plain tools duplicate, keyed ones cannot.

These need the `crashlab[llamaindex]` extra. LlamaIndex documents resume from a saved context as
at-least-once: a step still running when the context was saved runs again. The agent saves its
context each time a step ends (`StepStateChanged`); the tool step's end is saved by the second save
after the tracker's commit (the first is the previous step's end, read from the stream only once the
tool returned). So a plain agent must duplicate exactly from a commit to that save, and lose
nothing; keyed with the run ID and the tool ID, nothing may duplicate or be lost. Saved with
`ctx.to_dict()`'s default serializer, the agent's memory is left out and the restart cannot go on.
"""

import pytest

from .helpers import same_sweep, sweep_family

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept(triage):
    return {sweep.name: sweep for sweep in sweep_family("llamaindex", triage, slugs={"llamaindex-plain", "llamaindex-keyed"})}


def windows(points):
    """Each commit's window: from `accepted#N` to the second `save-done` after it, which holds the tool step's end."""
    found = []
    for k, point in enumerate(points):
        if point.startswith("accepted#"):
            saved = [j for j in range(k, len(points)) if points[j].startswith("save-done#")][1]
            found.append(range(k, saved))
    return found


def test_a_plain_agent_duplicates_only_between_the_commit_and_the_save_of_the_tool_step(swept, triage):
    plain = swept["llamaindex-plain"]
    assert len(plain.points) == len(plain.scenarios) > 30 and plain.flaky == 0
    found = windows(plain.points)
    assert len(found) == len(triage.changing_calls) == 3
    assert all(len(r) == 4 for r in found)  # accepted, the previous step's save (its two points), this step's save
    dying = {k for k, s in enumerate(plain.scenarios) if s.outcome.extra > 0}
    assert dying == {k for r in found for k in r}
    assert (plain.dups, plain.with_dups, plain.missing) == (12, 12, 0)  # one call made twice in each


def test_keyed_with_the_run_id_and_tool_id_no_kill_duplicates_or_loses_anything(swept):
    keyed = swept["llamaindex-keyed"]
    assert keyed.points == swept["llamaindex-plain"].points and keyed.flaky == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_the_default_json_serializer_drops_the_agents_memory_and_the_restart_is_stuck(cli):
    code, out, _ = cli("explain", "llamaindex-json:14")
    assert code == 0 and "CRASH at point 14 (accepted): process 1 dies here" in out
    assert "STUCK: it cannot go on" in out and "ValueError: Path 'memory' not found in state" in out


def test_sweep_loop_llamaindex_needs_kill(cli):
    code, out, err = cli("sweep", "--loop", "llamaindex")
    assert (code, out) == (2, "") and "llamaindex-plain runs only under the forked runner (--kill)" in err


def test_shared_a_llamaindex_sweep_is_the_re_executed_one_scenario_by_scenario(swept, triage):
    """Restarted from copies of the run directory and the service's rows, taken with the process stopped where
    its death would be: what re-executing every process from nothing gives, for every row."""
    for shared in sweep_family("llamaindex", triage, slugs={"llamaindex-plain", "llamaindex-keyed"}, share=True):
        same_sweep(shared, swept[shared.name])
