"""The job as a Pydantic AI agent, killed for real at every point: where each way of keeping it duplicates.

These need the `crashlab[pydanticai]` extra. A plain agent keeps its conversation only when the run
returns (Pydantic AI's persistence page), so a kill anywhere after the first commit and before that
save redoes every committed call. Made durable with DBOS, with each tool a `@DBOS.step`, a step runs
again exactly when the kill falls between its commit in the tracker and DBOS's record of its
output; keyed with DBOS's workflow and step IDs, nothing duplicates or goes missing. Tools left out
of steps redo every commit until the workflow returns.
"""

import pytest

from .helpers import same_sweep, sweep_family

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept(triage):
    return {sweep.name: sweep for sweep in sweep_family("pydanticai", triage)}


def duplicating(sweep):
    return [s.outcome.extra > 0 for s in sweep.scenarios]


def test_a_plain_agent_redoes_every_committed_call_until_its_conversation_is_saved(swept, triage):
    plain = swept["pydanticai-plain"]
    first, saved = plain.points.index("accepted#1"), plain.points.index("saved#1")
    assert duplicating(plain) == [first <= k < saved for k in range(len(plain.points))]
    assert plain.with_dups == saved - first > 0 and plain.missing == plain.flaky == 0


def test_a_dbos_step_runs_again_only_between_its_commit_and_dbos_recording_its_output(swept, triage):
    durable = swept["pydanticai-dbos"]
    window, open_ = [], False  # open from a tool's commit (accepted) until DBOS recorded a step's output
    for point in durable.points:
        open_ = point.startswith("accepted#") or (open_ and not point.startswith("recorded#"))
        window.append(open_)
    assert duplicating(durable) == window and sum(window) == 2 * len(triage.changing_calls)  # accepted, record
    assert durable.dups == durable.with_dups == sum(window) and durable.missing == durable.flaky == 0


def test_keyed_with_dbos_workflow_and_step_id_no_kill_duplicates_or_loses_anything(swept):
    keyed = swept["pydanticai-keyed"]
    assert keyed.points == swept["pydanticai-dbos"].points and keyed.flaky == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_tools_outside_dbos_steps_are_redone_on_every_recovery_until_the_workflow_returns(swept):
    inline = swept["pydanticai-inline"]
    first = inline.points.index("accepted#1")
    assert duplicating(inline) == [k >= first for k in range(len(inline.points))]
    assert inline.dups > swept["pydanticai-dbos"].dups and inline.missing == inline.flaky == 0


def test_sweep_loop_pydanticai_needs_kill(cli):
    code, out, err = cli("sweep", "--loop", "pydanticai")
    assert (code, out) == (2, "") and "pydanticai-plain runs only under the forked runner (--kill)" in err


def test_shared_a_pydanticai_sweep_is_the_re_executed_one_scenario_by_scenario(swept, triage):
    """Restarted from copies of the run directory and the service's rows, taken with the process stopped where
    its death would be: what re-executing every process from nothing gives, for every row."""
    for shared in sweep_family("pydanticai", triage, share=True):
        same_sweep(shared, swept[shared.name])
