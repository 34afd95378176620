"""The five designs, one process at a time: the traces the chapter prints, and why each duplicates."""

from crashlab.loops.designs import DESIGNS

from .helpers import scenario


def trace(design, job, crashes=()):
    run = scenario(design, job, crashes)
    return run, [e.label for e in run.points.points(1)]


def test_save_once_per_turn_passes_the_chapters_18_points(triage):
    _, labels = trace("per-turn", triage)
    assert labels == ["temp", "renamed", "reply", "accepted", "returned", "accepted", "returned", "temp", "renamed", "reply", "returned", "accepted", "returned", "temp", "renamed", "reply", "temp", "renamed"]


def test_uninterrupted_runs_pass_34_and_43_points(triage):
    assert len(trace("after-reply", triage)[1]) == 34
    assert len(trace("keys", triage)[1]) == 34
    assert len(trace("markers", triage)[1]) == 43
    assert len(trace("keys-markers", triage)[1]) == 43


def test_an_uninterrupted_run_does_everything_once(triage):
    for slug in DESIGNS:
        run, _ = trace(slug, triage)
        assert [r.call for r in run.world.tracker.records] == ["A", "B", "C"]
        assert run.world.model.calls == 3
        assert run.store.load().finished


def test_after_reply_repeats_a_call_accepted_but_not_saved(triage):
    _, labels = trace("after-reply", triage)
    i = labels.index("accepted") + 1  # the tracker applied A; its result is not saved yet
    run, _ = trace("after-reply", triage, (i,))
    assert len(run.world.tracker.made_by("A")) == 2


def test_keys_make_that_repeat_harmless(triage):
    _, labels = trace("keys", triage)
    run, _ = trace("keys", triage, (labels.index("accepted") + 1,))
    assert len(run.world.tracker.made_by("A")) == 1
    requests = [e.detail for e in run.points.events if e.kind == "request" and e.detail["call"] == "A"]
    assert [r["applied"] for r in requests] == [True, False]
    assert requests[0]["key"] == requests[1]["key"] is not None


def test_a_marker_without_a_result_makes_the_keyless_design_ask(triage):
    _, labels = trace("markers", triage)
    run, _ = trace("markers", triage, (labels.index("marker-saved") + 1,))  # marker of A saved, A not sent
    assert run.world.person.asks == 1
    assert len(run.world.tracker.made_by("A")) == 1


def test_a_marker_with_keys_reruns_without_asking(triage):
    _, labels = trace("keys-markers", triage)
    run, _ = trace("keys-markers", triage, (labels.index("accepted") + 1,))
    assert run.world.person.asks == 0
    assert [e.label for e in run.points.events if e.kind == "decision"] == ["rerun"]
    assert len(run.world.tracker.made_by("A")) == 1


def test_per_turn_loses_the_whole_turn_and_asks_the_model_again(triage):
    _, labels = trace("per-turn", triage)
    run, _ = trace("per-turn", triage, (labels.index("returned", labels.index("returned") + 1) + 1,))
    assert run.world.model.calls == 4
    assert len(run.world.tracker.made_by("A")) == len(run.world.tracker.made_by("B")) == 2
