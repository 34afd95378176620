"""A drifting model: asked again for a turn, a real model names its calls anew, and keys follow names.

Keys rescue a loop that saves once per turn only while the repeated turn repeats its call IDs, as
the scripted model's does. A model that drifts makes new IDs, so new keys, and the tracker files the
same issue again; counted by what each call means, that is a duplicate, and the record filed under
the replaced name is an orphan. A loop that saves the reply before running it never runs a reply
it did not save, so it comes out unchanged.
"""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings

from crashlab.faults.drifting_model import DRIFTS as SETTINGS
from crashlab.faults.drifting_model import DriftingModel
from crashlab.job import Call, Job, Turn
from crashlab.loops import FAMILIES
from crashlab.protocols.points import Recorder
from crashlab.world import Model

from .helpers import swept
from .oracle import shared_is_re_executed
from .strategies import jobs

DRIFTS = {drift: f"drifting-model={drift}" for drift in SETTINGS}
AGENTS = list(FAMILIES["agent"])
REPLY_FIRST = ["after-reply", "keys", "markers", "keys-markers", *AGENTS]


def ids(turn: Turn) -> list[str]:
    return [c.id for c in turn.calls]


def test_asked_again_a_drifting_model_names_its_calls_anew_and_refers_to_them_by_their_last_names():
    a, b = Call("A", "create_issue", {"title": "t", "body": "b"}), Call("B", "search", {"query": "q"})
    c = Call("C", "comment", {"issue": "$A", "body": "b"})
    job = Job("j", "j-run-1", (Turn((a, b)), Turn((c,)), Turn(answer="done")))
    points = Recorder()
    points.start_process()
    scripted, drifting = Model(points, job), DriftingModel(points, job, "ids")
    reordering = DriftingModel(points, job, "order")
    assert ids(scripted.reply(1)) == ids(scripted.reply(1)) == ["A", "B"]
    assert ids(drifting.reply(1)) == ["A", "B"] and ids(drifting.reply(1)) == ["A#2", "B#2"]
    assert drifting.reply(2).calls[0].args["issue"] == "$A#2"
    assert ids(reordering.reply(1)) == ["A", "B"] and ids(reordering.reply(1)) == ["B#2", "A#2"]
    assert drifting.reply(3).answer == "done"


def test_a_reply_whose_calls_refer_to_each_other_keeps_its_order():
    a, c = Call("A", "create_issue", {"title": "t", "body": "b"}), Call("C", "comment", {"issue": "$A", "body": "b"})
    points = Recorder()
    points.start_process()
    model = DriftingModel(points, Job("j", "j-run-1", (Turn((a, c)), Turn(answer="done"))), "order")
    model.reply(1)
    assert ids(model.reply(1)) == ["A#2", "C#2"]


@pytest.mark.parametrize("drift", DRIFTS)
@pytest.mark.parametrize("slug", REPLY_FIRST)
def test_a_loop_that_saves_the_reply_first_comes_out_unchanged(triage, slug, drift):
    drifting = swept(slug, triage, DRIFTS[drift]).row()
    crash = swept(slug, triage).row()
    assert (drifting.faults, drifting.setting) == (f"drifting-model {drift}", f"drift {drift}")
    # the model's memory tells more states apart
    assert replace(drifting, distinct=0, faults="crash", setting="") == replace(crash, distinct=0)


@pytest.mark.parametrize("drift", DRIFTS)
def test_keys_rescue_a_repeated_turn_only_while_the_model_repeats_its_call_ids(triage, drift):
    assert swept("per-turn-keys", triage).row().dups == 0
    drifting = swept("per-turn-keys", triage, DRIFTS[drift])
    dups = [s for s in drifting.scenarios() if s.outcome.extra]
    assert dups and drifting.row().missing == 0
    for s in dups:
        assert set(s.outcome.dups) <= {c.id for c in triage.changing_calls}  # counted by the job's calls
        assert s.outcome.orphans >= s.outcome.extra, s.id  # each copy but the saved one has a replaced name


def test_every_scenario_is_what_re_executing_it_gives(triage):
    """The oracle: the shared sweep's outcome of each scenario equals running it, the drifting model and all, anew."""
    shared_is_re_executed(triage, ("per-turn-keys", "agent-keyed"), DRIFTS["order"])


@settings(max_examples=6, deadline=None)
@given(jobs(max_calls=2, harder=True))
def test_on_any_job_the_agent_comes_through_a_drifting_model(job):
    for drift, fault in DRIFTS.items():
        for slug in AGENTS:
            row = swept(slug, job, fault).row()
            assert (row.dups, row.missing, row.wrong, row.orphans) == (0, 0, 0, 0), (slug, drift)


def test_sweep_and_explain_under_a_drifting_model(cli):
    code, out, err = cli("sweep", "--fault", "drifting-model", "--drift", "order", "--variant",
                         "per-turn-keys,agent-keyed", "--depth", "1", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["per-turn-keys"]["dups"] > 0 and rows["agent-keyed"]["dups"] == 0
    assert rows["per-turn-keys"]["setting"] == "drift order" and rows["per-turn-keys"]["orphans"] > 0
    assert rows["per-turn-keys"]["faults"] == "drifting-model order"
    code, out, err = cli("sweep", "--fault", "drifting-model", "--variant", "per-turn-keys", "--list", "dups")
    first = out.splitlines()[0].split()
    assert code == 0 and first[0].startswith("per-turn-keys+drifting-model=ids:")  # --drift ids, the default
    assert first[-5:] == ["crashlab", "explain", first[0], "--job", "triage"]  # the ID alone replays it
    code, out, err = cli("explain", "per-turn-keys+drifting-model:6")
    assert code == 0 and out.startswith("scenario per-turn-keys+drifting-model=ids:6:")
    assert "replies A#2 B#2" in out and "A was sent 2 times as A, A#2" in out and "orphans:" in out
    for args, problem in ((["sweep", "--drift", "ids"], "it needs --fault drifting-model"),
                          (["explain", "keys+power-cut=ids:3~1"], "--sync 'ids' is not one of none, file, full"),
                          (["explain", "keys:3", "--drift", "ids"], "No such option '--drift'"),
                          (["sweep", "--fault", "drifting-model", "--drift", "sideways"], "'sideways' is not one of"),
                          (["explain", "keys+drifting-model=sideways:3"], "--drift 'sideways' is not one of")):
        code, out, err = cli(*args)
        assert (code, out) == (2, "") and problem in err, args
