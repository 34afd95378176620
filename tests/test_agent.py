"""The agent's own loop keeps its guarantees on every job, under every tracker, at every crash."""

from dataclasses import replace

import pytest
from hypothesis import given

from crashlab.check.promises import broken
from crashlab.durable.checkpoint import CheckpointError
from crashlab.durable.store import FileStore, MemoryStore
from crashlab.engine.sweep import sweep
from crashlab.job import load_job
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.loops.agent import ASK, LOOKUP, RERUN, Agent, AgentLoop, ladder
from crashlab.loops.tools import ToolSpec, toolbox
from crashlab.protocols.points import Recorder, recording
from crashlab.protocols.run import Run
from crashlab.protocols.scenario import Setup
from crashlab.runners import RunnerSpec
from crashlab.world import World

from .conftest import SCENARIOS
from .helpers import scenario, swept
from .strategies import jobs

JOBS = ["triage", "server-dies", "approval", pytest.param("wide", marks=pytest.mark.slow), "one-per-turn", "read-only"]


def check_guarantees(job):
    """No duplicate, nothing lost, no question unless the tracker is keyless, one approval per gate."""
    rows = {}
    for agent in FAMILIES["agent"].values():
        sweep = swept(agent.slug, job)
        rows[agent.tracker] = sweep.row()
        assert [what for s in sweep.scenarios() for what in broken(agent, job, s)] == [], agent.slug
    return rows


@pytest.mark.parametrize("name", JOBS)
def test_the_guarantees_hold_on_every_shipped_job(name):
    job = load_job(SCENARIOS / f"{name}.yaml")
    rows = check_guarantees(job)
    if job.changing_calls:
        assert rows["keyless"].asks > 0  # the keyless tracker is the one that costs the person


@given(jobs(max_calls=2, harder=True))
def test_the_guarantees_hold_on_generated_jobs(job):
    check_guarantees(job)


def run(tracker, name, crashes=()):
    return scenario(f"agent-{tracker}", load_job(SCENARIOS / f"{name}.yaml"), crashes)


def live(entry, job, world, store, points, directory=None):
    """One process of a loop, outside any sweep: its points go to `points`, and nothing crashes it."""
    with recording(points):
        entry(Run(job, world, store, directory, points.process, points))


def labels(scenario, process=1):
    return [e.label for e in scenario.points.points(process)]


def events(scenario, kind):
    return [e for e in scenario.points.events if e.kind == kind]


def test_the_ladder_tries_harmless_repeat_then_lookup_then_the_person():
    assert ladder(ToolSpec("search", read_only=True))[0] == RERUN
    assert ladder(ToolSpec("close", idempotent=True))[0] == RERUN
    assert ladder(ToolSpec("create", honours_keys=True, supports_lookup=True))[0] == RERUN
    assert ladder(ToolSpec("create", supports_lookup=True))[0] == LOOKUP
    assert ladder(ToolSpec("create"))[0] == ASK
    assert [ladder(toolbox(mode)["create_issue"])[0] for mode in ("keyed", "lookup", "keyless")] == [RERUN, LOOKUP, ASK]


@pytest.mark.parametrize(("tracker", "rung"), [("keyed", RERUN), ("lookup", LOOKUP), ("keyless", ASK)])
def test_a_crash_in_the_middle_of_the_ladder_resumes_the_saved_rung(tracker, rung):
    """Crash after A is accepted; crash the restart right after it saved its rung; the third settles."""
    first = labels(run(tracker, "triage")).index("accepted") + 1
    restart = labels(run(tracker, "triage", (first,)), 2).index("decision-saved") + 1
    scenario = run(tracker, "triage", (first, restart))
    decisions = events(scenario, "decision")
    assert [(e.process, e.label) for e in decisions] == [(2, rung), (3, rung)]
    assert decisions[1].detail["why"] == "resumed from the checkpoint"
    assert len(scenario.world.tracker.made_by("A")) == 1
    assert scenario.store.load().turns[0].results["A"] == 1


@pytest.mark.parametrize(("tracker", "asks", "repeats"), [("keyed", 0, 1), ("lookup", 0, 0), ("keyless", 1, 0)])
def test_a_server_that_dies_after_accepting_is_settled_not_retried_blindly(tracker, asks, repeats):
    scenario = run(tracker, "server-dies")
    assert [e.detail["call"] for e in events(scenario, "transport-error")] == ["B", "S"]
    assert len(scenario.world.tracker.made_by("B")) == 1
    assert scenario.world.person.asks == asks
    b_requests = [e for e in events(scenario, "request") if e.detail["call"] == "B"]
    assert sum(not e.detail["applied"] for e in b_requests) == repeats
    assert scenario.store.load().turns[0].results["B"] == 2  # the answer of the one issue B


@pytest.mark.parametrize("point", ["approval-asked", "approval-decided", "approval-saved"])
@pytest.mark.parametrize("tracker", ["keyed", "keyless"])
def test_a_crash_at_the_approval_gate_never_asks_twice_nor_runs_unapproved(tracker, point):
    crash = labels(run(tracker, "approval")).index(point) + 1  # B's gate
    scenario = run(tracker, "approval", (crash,))
    assert scenario.world.person.approvals == 2  # B and C, once each
    assert len(events(scenario, "approval-request")) == 2
    decided = [e.detail["call"] for e in events(scenario, "approval") if e.detail["decided_now"]]
    assert decided == ["B", "C"]  # each decided once, whichever process heard the decision
    assert len(scenario.world.tracker.made_by("B")) == 1
    if tracker == "keyed":
        assert scenario.world.person.asks == 0  # with keys, nobody is asked anything but the approval


def test_every_gated_request_follows_its_approval_in_every_single_crash():
    job = load_job(SCENARIOS / "approval.yaml")
    n = scenario("agent-keyless", job, ()).passed(1)
    for i in range(1, n + 1):
        crashed = scenario("agent-keyless", job, (i,))
        for call in ("B", "C"):
            kinds = [e.kind for e in crashed.points.events
                     if e.kind in ("approval", "request") and e.detail.get("call") == call]
            assert kinds[0] == "approval", (i, call)


def test_a_refused_call_is_never_run():
    job = load_job(SCENARIOS / "approval.yaml")
    points = Recorder()
    points.start_process()
    world = World.new(job, points, "keyed", approves=False)
    store = MemoryStore(points)
    live(Agent("keyed").entry, job, world, store, points)
    assert [r.call for r in world.tracker.records] == ["A"]
    assert store.load().turns[0].results["B"] == "refused by the person"


def test_a_new_run_gets_a_fresh_id_and_a_resumed_run_keeps_its_own():
    assert run("keyed", "triage", (1,)).store.load().run == "triage-run-1.p2"  # died before the first save
    assert run("keyed", "triage", (2,)).store.load().run == "triage-run-1.p1"  # the start save was durable
    points = Recorder()
    points.start_process()
    job = load_job(SCENARIOS / "triage.yaml")
    ids = set()
    for _ in range(2):
        store = MemoryStore(points)
        live(Agent("keyed", random_ids=True).entry, job, World.new(job, points), store, points)  # as `crashlab run`
        ids.add(store.load().run)
    assert len(ids) == 2


def test_a_corrupt_checkpoint_stops_the_loop_instead_of_starting_over(tmp_path):
    job = load_job(SCENARIOS / "triage.yaml")
    points = Recorder()
    points.start_process()
    store = FileStore(tmp_path, points)
    world = World.new(job, points)
    live(Agent("keyed").entry, job, world, store, points, tmp_path)
    store.path.write_text(store.path.read_text()[:40])  # truncated, as by a torn write
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        live(Agent("keyed").entry, job, world, store, points, tmp_path)
    assert world.model.calls == 3 and len(world.tracker.records) == 3  # nothing was done again


@pytest.mark.slow
def test_the_file_store_gives_the_agent_the_identical_outcome_in_every_scenario():
    job = load_job(SCENARIOS / "approval.yaml")
    agent = "agent-keyless"  # the tracker with the most to lose: asks, approvals, every rung
    on_disk = swept(agent, job, store="files").scenarios()
    in_memory = swept(agent, job).scenarios()
    assert [(s.id, s.outcome, s.hits, s.saves) for s in on_disk] == [
        (s.id, s.outcome, s.hits, s.saves) for s in in_memory
    ]


class ForgetsToSaveApprovals(AgentLoop):
    """The agent's loop without its approval save: it asks the desk every time."""

    def approved(self, call):
        return self.world.desk.approve(call, self.key(call))


def careless_agent(run):
    """One process of the careless agent, on a keyed tracker."""
    ForgetsToSaveApprovals(run, toolbox("keyed"), lambda: "run").run()


def keyed_agent(desk="remembers", entry=None):
    """The keyed agent's variant, with an approval desk that remembers or forgets, run as `entry` (its own loop)."""
    return replace(VARIANTS["agent-keyed"], desk=desk, entry=entry or Agent("keyed", desk).entry)


def asked_again(variant, job):
    """The scenarios whose person was asked more approvals than the job has gates, run again for their story."""
    gated = sum(c.needs_approval for c in job.calls)
    setup = Setup(variant, job)
    scenarios = sweep(setup, RunnerSpec()).scenarios()
    with RunnerSpec().open() as runner:
        return [runner.scenario(setup, s.crashes) for s in scenarios if s.outcome.approvals > gated]


def died_at_the_gate(run):
    """Some process died after a question was put and before its decision was saved: no save can help there."""
    for crash in run.points.crashes():
        labels = [e.label for e in run.points.points(crash.process)]
        asked = [k for k, label in enumerate(labels) if label == "approval-asked"]
        if asked and "approval-saved" not in labels[asked[-1]:]:
            return True
    return False


def test_with_a_desk_that_forgets_only_a_death_at_the_gate_asks_twice():
    job = load_job(SCENARIOS / "approval.yaml")
    again = asked_again(keyed_agent("forgets"), job)
    assert again and all(died_at_the_gate(run) for run in again)
    assert asked_again(keyed_agent(), job) == []  # a desk that remembers spares even those


def test_the_approval_save_is_what_spares_the_person_a_second_question():
    job = load_job(SCENARIOS / "approval.yaml")
    careless = asked_again(keyed_agent("forgets", careless_agent), job)
    careful = asked_again(keyed_agent("forgets"), job)
    assert len(careless) > len(careful)
    def after_the_gate(run):  # one crash, at a point the careful loop reaches with its decision durable
        return [e.label for e in run.points.crashes()] in (["marker-saved"], ["accepted"])

    assert not any(map(after_the_gate, careful))
    assert any(map(after_the_gate, careless))
