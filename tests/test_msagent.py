"""The job as a Microsoft Agent Framework workflow, killed for real at every point: plain tools duplicate, keyed ones cannot.

These need the `crashlab[msagent]` extra. The framework saves a checkpoint at the end of each superstep, and the
agent's whole tool loop runs in one superstep: a plain workflow must duplicate exactly where a kill falls between a
tool's commit in the tracker (`accepted`) and the end of the next checkpoint save (`save-done`), and nowhere else,
and lose nothing. Keyed with the agent session's ID (restored from the checkpoint) and the call ID, no kill may
duplicate or lose anything. Tools that need approval end a superstep at each reply, which narrows the window; a
kill between the person's answer and the checkpoint that records it asks the person again.
"""

import pytest

from crashlab.durable.fuse import unusable

from .helpers import sweep_family

pytestmark = pytest.mark.slow

APPROVALS = 3  # the uninterrupted approval row asks the person about A, B and C, once each


@pytest.fixture(scope="module")
def swept(triage):
    return {sweep.name: sweep for sweep in sweep_family("msagent", triage)}


def unsaved(points, begin, end="save-done#"):
    """The indexes of the kills that fall after a `begin` point and before the next `end` point finished."""
    inside, found = False, []
    for k, point in enumerate(points):
        if point.startswith(begin):
            inside = True
        elif point.startswith(end):
            inside = False
        if inside:
            found.append(k)
    return found


@pytest.mark.parametrize("slug", ["msagent-plain", "msagent-approval"])
def test_a_plain_workflow_duplicates_exactly_between_the_commit_and_the_next_checkpoint(swept, slug):
    plain = swept[slug]
    assert len(plain.points) == len(plain.scenarios) > 10 and plain.flaky == 0
    window = unsaved(plain.points, "accepted#")
    assert len(window) >= 3  # not vacuous: there is a window
    assert [k for k, s in enumerate(plain.scenarios) if s.outcome.extra > 0] == window
    assert plain.missing == 0


def test_the_agent_loop_is_one_superstep_so_a_kill_before_its_save_redoes_every_call(swept, triage):
    plain = swept["msagent-plain"]
    loop = plain.points[plain.points.index("save-done#1") + 1:plain.points.index("save#2")]  # the entry save's next
    assert [p for p in plain.points if p.startswith(("accepted#", "model-"))] == loop  # no save amid the loop
    last = plain.scenarios[plain.points.index("save#2")]
    assert last.outcome.extra == len(triage.changing_calls)  # A, B and C, all made again


def test_approvals_end_a_superstep_at_each_reply_so_a_kill_in_the_second_redoes_only_its_own_call(swept):
    approval, plain = swept["msagent-approval"], swept["msagent-plain"]
    comment = approval.scenarios[approval.points.index("accepted#3")]
    assert dict(comment.outcome.dups) == {"C": 1}
    assert approval.dups < plain.dups


def test_a_kill_between_the_persons_answer_and_its_checkpoint_asks_the_person_again(swept):
    approval = swept["msagent-approval"]
    asked_again = [k for k, s in enumerate(approval.scenarios) if s.outcome.approvals > APPROVALS]
    assert asked_again == unsaved(approval.points, "approved#") and asked_again  # not vacuous
    assert all(s.outcome.approvals == 0 for s in swept["msagent-plain"].scenarios)


@pytest.mark.parametrize("slug", ["msagent-keyed", "msagent-named"])
def test_keyed_with_the_session_and_call_id_no_kill_duplicates_or_loses_anything(swept, slug):
    keyed = swept[slug]
    assert keyed.points == swept["msagent-plain"].points and keyed.flaky == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


@pytest.mark.skipif(bool(unusable()), reason=f"FUSE is not usable here: {unusable()}")
def test_a_power_cut_takes_the_unsynced_checkpoint_and_with_it_the_generated_session_id(swept, triage):
    """FileCheckpointStorage writes a temporary file and renames it, with no fsync of either: a cut takes the
    checkpoint back, the restart starts over with a new generated session ID, and its keys match nothing. A session
    named by the caller keeps its keys."""
    from crashlab.faults.power_cut import PowerCut

    keyed, named = sweep_family("msagent", triage, faults=[PowerCut.configured()], slugs={"msagent-keyed", "msagent-named"})
    assert keyed.dups > 0 and keyed.missing == 0 and keyed.dups >= swept["msagent-plain"].dups
    assert (named.dups, named.missing, named.failures()) == (0, 0, [])


def test_sweep_loop_msagent_needs_kill_and_explain_tells_a_scenario(cli):
    code, out, err = cli("sweep", "--loop", "msagent")
    assert (code, out) == (2, "") and "msagent-plain runs only under the forked runner (--kill)" in err
    code, out, err = cli("explain", "msagent-plain:12")
    assert code == 0 and "CRASH at point 12 (save): process 1 dies here" in out
    assert "A ×2, B ×2, C ×2 (DUPLICATED)" in out and "missing:       none" in out
