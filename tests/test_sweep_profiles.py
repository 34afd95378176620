"""Sweeps under each provider's idempotency contract: each profile's row differs from the draft's exactly where
its documented contract does (`crashlab.profiles`, docs/explanation/idempotency-contracts.md).

The contracts differ in four ways a loop can meet: how long a key is kept (Qonto's 30 minutes against
a keyed loop that assumes 24 h, under expired-key), what a retry after a failure that made its
effect gets (failed-after-effect: Checkout.com and ACP run it again), whether a key is required
(ACP, Qonto, TrueLayer refuse an unkeyed design's every request), and whether a key is honoured at
all (``none``). Worldline refuses keys over 40 characters: the agent's are 32, a loop of yours's may not be.
"""

import json

import pytest
from hypothesis import given, settings

from crashlab.engine.sweep import sweep
from crashlab.faults.expired_key import DOWNTIMES, downtimes
from crashlab.job import Call
from crashlab.loops import DESIGNS, VARIANTS
from crashlab.loops.keys import key
from crashlab.profiles import DEFAULT, Profile, find, registry
from crashlab.protocols.points import Recorder
from crashlab.protocols.scenario import ScenarioError, Setup, parse_scenario_id
from crashlab.runners import RunnerSpec
from crashlab.world import Clock, Refused, Tracker
from crashlab.world.sqlite import Database, SqliteTracker

from .helpers import faults
from .strategies import jobs

PROFILES = list(registry())
KEYED = [slug for slug, design in DESIGNS.items() if design.sends_keys]
UNKEYED = [slug for slug, design in DESIGNS.items() if not design.sends_keys]
A = Call("A", "create_issue", {"title": "t", "body": "b"})


def row(slug: str, profile: str, *under: str, depth: int = 2, job=None):
    """`slug`'s row of `job` (triage), swept in process under the faults named, against `profile`'s tracker."""
    return sweep(Setup(VARIANTS[slug], job or _triage(), faults(*under), profile), RunnerSpec(), depth=depth).row()


def counts(r) -> tuple[int, ...]:
    return r.scenarios, r.with_dups, r.dups, r.missing, r.wrong, r.asks, r.calls_plus


def _triage():
    from crashlab.job import find_job

    return find_job("triage")


def test_the_default_profile_is_the_draft_and_names_no_scenario():
    setup = Setup(VARIANTS["keys"], _triage())
    assert setup.profile == DEFAULT == "ietf" and setup.id((3,)) == "keys:3"
    assert Setup(VARIANTS["keys"], _triage(), profile="qonto").id((3,), ()) == "keys@qonto:3"
    parsed = parse_scenario_id("keys+expired-key@qonto:3~1", VARIANTS)
    assert (parsed.profile, parsed.crashes, parsed.choices, parsed.faults.tag) == ("qonto", (3,), ((1,),),
                                                                                  "+expired-key")
    assert parse_scenario_id("keys:3", VARIANTS).profile == DEFAULT
    with pytest.raises(ScenarioError, match="named by no @ietf"):
        parse_scenario_id("keys@ietf:3", VARIANTS)
    with pytest.raises(ScenarioError, match="unknown profile 'bogus'"):
        parse_scenario_id("keys@bogus:3", VARIANTS)


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_changes_a_design_s_row_exactly_where_its_contract_refuses_or_ignores_a_key(profile):
    """Under the crash alone: a required key refuses an unkeyed design's every request (all missing), and a
    receiver that honours no key leaves a keyed design as exposed as an unkeyed one. Nothing else differs."""
    contract = find(profile)
    for slug in DESIGNS:
        theirs, ours = row(slug, profile, depth=1), row(slug, DEFAULT, depth=1)
        refused = contract.key_required and slug in UNKEYED
        ignored = not contract.honours_keys and slug in KEYED
        assert (counts(theirs) != counts(ours)) == (refused or ignored), (slug, profile)
        if refused:
            assert theirs.missing > 0 and theirs.dups == theirs.wrong == 0  # refused, not misremembered
        if ignored:
            assert theirs.dups > 0 and ours.dups == 0


def test_a_keyed_agent_that_assumes_24_h_duplicates_against_qonto_after_an_hour_where_it_does_not_against_ietf():
    qonto, ietf = (sweep(Setup(VARIANTS["agent-keyed"], _triage(), faults("expired-key"), p), RunnerSpec(), depth=1)
                   for p in ("qonto", DEFAULT))
    duplicated = [s for s in qonto.scenarios() if s.outcome.extra]
    assert duplicated and {s.choices for s in duplicated} == {((1,),)}  # each at the hour's downtime (~1)
    assert all(s.id.startswith("agent-keyed+expired-key@qonto:") for s in duplicated)
    assert not any(s.outcome.extra for s in ietf.scenarios())


def test_expired_key_restarts_past_each_profile_s_retention_and_keeps_the_draft_s_downtimes():
    assert downtimes(find(DEFAULT)) == DOWNTIMES == (1.0, 48.0)
    for profile in registry().values():
        short, long = downtimes(profile)
        assert short == 1.0 and (profile.retention is None or long > profile.retention)
    assert downtimes(find("truelayer")) == (1.0, 1440.0)
    # The keyed design reruns whatever its marker says: it duplicates past the retention, under TrueLayer only at ~2.
    truelayer = sweep(Setup(VARIANTS["keys"], _triage(), faults("expired-key"), "truelayer"), RunnerSpec(), depth=1)
    assert {s.choices for s in truelayer.scenarios() if s.outcome.extra} == {((2,),)}


@pytest.mark.parametrize("profile", PROFILES)
def test_a_failure_after_the_effect_is_made_again_by_a_keyed_retry_only_where_the_contract_keeps_no_failure(profile):
    """Checkout.com, ACP and Qonto keep only a success: a keyed retry after a 5xx that made its effect makes it
    again. Stripe v1 keeps the 500: the keyed design saves a failure for an effect that was made (wrong), the agent
    looks it up. Stripe v2, the draft, TrueLayer and Worldline answer the retry with the success."""
    contract = find(profile)
    runs_again = contract.after_failure == "run-again"
    for slug in ("keys", "keys-markers", "agent-keyed"):
        theirs = row(slug, profile, "failed-after-effect", depth=1)
        assert (theirs.dups > 0) == runs_again, (slug, profile)
        assert (theirs.wrong > 0) == (contract.after_failure == "replay-failure" and slug != "agent-keyed")
    unkeyed = row("after-reply", profile, "failed-after-effect", depth=1)
    assert (unkeyed.dups > 0) == (not contract.key_required)  # a keyless retry makes it again, where it is taken


@settings(max_examples=5, deadline=None)
@given(jobs(max_calls=2))
def test_on_any_job_a_receiver_that_honours_no_key_makes_the_keyed_design_the_unkeyed_one(job):
    """Under ``none`` the keys design sends keys no one reads: on any job it comes to what the design without
    them comes to against the draft, scenario for scenario."""
    for under in ((), ("failed-after-effect",)):
        assert counts(row("keys", "none", *under, depth=1, job=job)) == \
            counts(row("after-reply", DEFAULT, *under, depth=1, job=job)), under


def test_the_agent_s_keys_fit_worldline_s_40_characters_so_its_row_is_the_draft_s():
    assert len(key("triage-1.p1", "A")) == 32 <= find("worldline").max_key
    assert counts(row("agent-keyed", "worldline", depth=1)) == counts(row("agent-keyed", DEFAULT, depth=1))


def keyed_tracker(where: str, db: Database, contract: Profile) -> Tracker | SqliteTracker:
    """A keyed tracker under `contract`, in memory or in the database `db`, its process begun."""
    points = Recorder()
    points.start_process()
    return Tracker(points, "keyed", Clock(), contract) if where == "memory" else \
        SqliteTracker(points, db, "keyed", contract)


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_same_key_another_payload_is_refused_by_the_draft_and_answered_from_the_key_by_qonto_and_worldline(where,
                                                                                                         tmp_path):
    other = {"title": "t", "body": "another"}
    for slug in PROFILES:
        contract = find(slug)
        with Database(tmp_path / f"{slug}.sqlite") as db:
            tracker = keyed_tracker(where, db, contract)
            assert tracker.request(A, A.args, "k") == 1
            if not contract.honours_keys:
                assert tracker.request(A, other, "k") == 2  # no key is read: applied again
            elif contract.other_payload == "replayed":
                assert tracker.request(A, other, "k") == 1 and len(tracker.records) == 1
            else:
                with pytest.raises(Refused, match=f"{contract.other_payload_status}: the key was first used"):
                    tracker.request(A, other, "k")
                assert len(tracker.records) == 1
            assert tracker.request(A, A.args, "k") == (3 if not contract.honours_keys else 1)  # the same payload


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_a_missing_or_overlong_key_is_refused_where_the_contract_says_and_nothing_is_made(where, tmp_path):
    for slug in PROFILES:
        contract = find(slug)
        with Database(tmp_path / f"{slug}.sqlite") as db:
            tracker = keyed_tracker(where, db, contract)
            if contract.key_required:
                with pytest.raises(Refused, match=r"400: .* requires an idempotency key"):
                    tracker.request(A, A.args)
            else:
                assert tracker.request(A, A.args) == 1
            made = len(tracker.records)
            if contract.max_key < 41:
                with pytest.raises(Refused, match=f"at most {contract.max_key} characters"):
                    tracker.request(A, A.args, "k" * 41)
                assert len(tracker.records) == made
            else:
                assert tracker.request(A, A.args, "k" * 41) == made + 1


def test_sweep_profile_all_prints_one_table_loop_by_profile_and_json_rows_name_their_profile(cli):
    code, out, err = cli("sweep", "--variant", "keys", "--profile", "all", "--depth", "1")
    assert code == 0, err
    lines = out.splitlines()
    assert [cell.strip() for cell in lines[0].split("|")[1:-1]] == ["variant", "profile", "scenarios", "with dups",
                                                                     "dups", "missing", "wrong", "asks", "calls+"]
    assert [line.split("|")[2].strip() for line in lines[2:]] == PROFILES  # the default first
    code, out, err = cli("sweep", "--variant", "keys", "--profile", "none,ietf", "--depth", "1", "--format", "json")
    assert code == 0, err
    none, ietf = json.loads(out)
    assert (none["profile"], ietf["profile"]) == ("none", "ietf") and none["variant"] == ietf["variant"] == "keys"
    assert none["dups"] > 0 == ietf["dups"]


def test_an_unknown_profile_or_an_option_the_profile_table_cannot_honour_is_refused_in_one_line(cli):
    code, out, err = cli("sweep", "--variant", "keys", "--profile", "stripe")
    assert (code, out) == (2, "")
    assert err.strip() == "crashlab: error: unknown profile 'stripe' (valid: all, " + ", ".join(PROFILES) + ")"
    code, out, err = cli("sweep", "--variant", "keys", "--profile", "acp,acp")
    assert (code, out, err.strip()) == (2, "", "crashlab: error: profile 'acp' is named twice in 'acp,acp'")
    code, out, err = cli("sweep", "--variant", "keys", "--profile", "all", "--check", "results/book.txt")
    assert (code, out) == (2, "") and "--profile prints the loop × profile table" in err and "Traceback" not in err


def test_a_scenario_under_a_profile_is_explained_by_its_id(cli):
    code, out, err = cli("sweep", "--variant", "keys", "--profile", "none", "--depth", "1", "--list", "dups")
    assert code == 0, err
    first = out.split()[0]
    assert first.startswith("keys@none:")
    code, out, err = cli("explain", first)
    assert code == 0, err and "APPLIES it" in out


def test_your_loop_with_keys_longer_than_worldline_takes_loses_its_effects_there_and_not_under_the_draft():
    """tests/profile_loop.py imports nothing of crashlab's but its point, and is swept through the public API (on the
    command line a loop of yours calls the service, whose profiles are the service's part of issue 41). An empty
    loop fails its uninterrupted run; one that files its issues unkeyed or with short keys is not refused."""
    from crashlab.api import sweep as sweep_yours

    from .profile_loop import triage

    ietf, worldline = (sweep_yours(triage, ["A", "B"], name="long-keys", depth=1, profile=p)
                       for p in (DEFAULT, "worldline"))
    assert ietf.row().scenarios > 0 and ietf.missing == ietf.dups == 0
    assert worldline.missing > 0 and worldline.dups == 0
    assert all("@worldline:" in s.id for s in worldline.scenarios)


@pytest.mark.slow
def test_the_http_loop_is_swept_against_the_service_under_each_profile(cli):
    """The HTTP loop's service keeps each profile: under `none` the keyed loop duplicates as an unkeyed one does.
    The plain loop is not swept under a profile that requires a key: its first request is refused, and the loop
    (which takes a refusal for a bug) fails its uninterrupted run."""
    code, out, err = cli("sweep", "--loop", "examples/http_loop.py:keyed", "--effects", "examples/http_loop.yaml",
                         "--depth", "1", "--profile", "all", "--format", "json")
    assert code == 0, err
    rows = {r["profile"]: r for r in json.loads(out)}
    assert set(rows) == set(registry())
    assert rows["none"]["dups"] > 0 and all(rows[p]["dups"] == 0 for p in rows if p != "none")


@pytest.mark.parametrize("args", [
    ("sweep", "--variant", "keys", "--profile", ""),
    ("sweep", "--variant", "keys", "--profile", "ALL"),
    ("sweep", "--variant", "keys", "--profile", "ietf,,acp"),
    ("sweep", "--variant", "keys", "--profile", "all", "--fault", "all"),
    ("explain", "keys@qonto"),
    ("explain", "keys@:3"),
    ("explain", "keys@qonto@acp:3"),
    ("explain", "keys+failed-after-effect=0:3"),
    ("explain", "keys@Qonto:3"),
])
def test_a_hostile_profile_or_scenario_is_refused_in_one_line(cli, args):
    code, out, err = cli(*args)
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.slow
def test_a_loop_its_contract_refuses_is_a_row_that_says_so_and_the_other_rows_stand(cli):
    """Issue 41: the plain HTTP loop takes ACP's 400 for a bug and fails its uninterrupted run. Under several
    profiles that is ACP's row, blank, saying why; the keyed loop is swept under ACP, and the draft's rows are those
    of a sweep under the draft alone. The contract's refusal is the finding, so the sweep exits 0."""
    loop = ("--loop", "examples/http_loop.py:plain,keyed", "--effects", "examples/http_loop.yaml", "--depth", "1")
    code, out, err = cli("sweep", *loop, "--profile", "ietf,acp", "--format", "json")
    assert code == 0, err
    rows = {(r["variant"], r["profile"]): r for r in json.loads(out)}
    refused = rows["plain", "acp"]
    assert refused["failed"] == ("refused by the acp contract: its uninterrupted run failed (create_issue: 400 "
                                 "idempotency_key_required)")
    assert refused["scenarios"] is None and refused["dups"] is None
    assert rows["keyed", "acp"]["scenarios"] > 0 and rows["keyed", "acp"]["dups"] == 0
    assert not any("failed" in r for key, r in rows.items() if key != ("plain", "acp"))
    code, alone, err = cli("sweep", *loop, "--profile", "ietf", "--format", "json")
    assert code == 0, err
    assert json.loads(alone) == [rows["plain", "ietf"], rows["keyed", "ietf"]]
    assert rows["plain", "ietf"]["dups"] > 0
    code, table, err = cli("sweep", *loop, "--profile", "acp")
    assert code == 0, err
    line = next(line for line in table.splitlines() if "| plain" in line)
    assert "refused by the acp contract" in line and not any(ch.isdigit() for ch in line.split("refused")[0])


def test_a_loop_that_fails_for_no_contract_s_reason_still_fails_a_sweep_under_several_profiles(cli):
    """tests/unfound_loop.py comments on an issue the service does not hold and dies of the 404, under any
    profile: that is the loop's failure, not a contract's refusal, and the sweep fails with the harness error."""
    code, out, err = cli("sweep", "--loop", "tests/unfound_loop.py:comment", "--effects", "examples/http_loop.yaml",
                         "--depth", "1", "--profile", "acp,ietf")
    assert code == 3 and out == ""
    assert err.startswith("crashlab: harness error: comment@acp: process 1 failed: HTTPError: HTTP Error 404"), err


def test_only_a_contract_s_refusal_of_the_last_request_makes_a_failed_run_the_contract_s():
    """A first process that failed is the contract's refusal only if the last request the service answered was
    refused by the contract's own rules; a 404, or a contract refusal the loop went on from, is the loop's."""
    from crashlab.protocols.points import Event, Where
    from crashlab.runners.served import LoopFailed, RefusedByContract, refused_by

    setup = Setup(VARIANTS["keys"], _triage(), profile="acp")
    refusal = Event(1, "refused", "create_issue", Where(), 0,
                    {"status": 400, "key": None, "code": "idempotency_key_required", "contract": True})
    not_found = Event(1, "refused", "comment", Where(), 0, {"status": 404, "key": "k"})
    made = Event(1, "request", "create_issue", Where(), 0, {"key": "k", "applied": True})
    saved = Event(1, "point", "put-writes", Where(), 1)

    def judged(*events: Event) -> LoopFailed:
        points = Recorder((), "keys@acp")
        points.start_process()
        points.events.extend(events)
        return refused_by(LoopFailed("keys@acp: process 1", "ServiceError: 400"), setup, points)

    told = judged(made, refusal, saved)
    assert isinstance(told, RefusedByContract) and told.refusal == "create_issue: 400 idempotency_key_required"
    assert (told.variant, told.profile, str(told)) == ("keys", "acp", "keys@acp: process 1 failed: ServiceError: 400")
    for events in [(), (made,), (not_found,), (refusal, made), (made, not_found, saved)]:
        assert type(judged(*events)) is LoopFailed


def test_before_the_sweep_chooses_a_request_the_service_fails_none():
    """`--fault all` asks each fault how it serves before its choices are found: then no request fails yet (a
    `ValueError` traceback ended `make results`'s sweep of the HTTP loop)."""
    from crashlab.faults.failed_after_effect import FailedAfterEffect
    from crashlab.protocols.fault import Serving

    assert FailedAfterEffect.configured().serve(Serving()).failed_after == 0
    assert FailedAfterEffect.configured("2").serve(Serving()).failed_after == 2


@pytest.mark.slow
def test_the_http_loop_is_swept_under_a_failure_after_the_effect(cli):
    """The service fails each changing request in turn after making it: the plain loop makes C twice where it dies
    before saving; the keyed one never makes anything twice (the HTTP loop takes a 500 for the end of its run)."""
    code, out, err = cli("sweep", "--loop", "examples/http_loop.py:plain,keyed", "--effects", "examples/http_loop.yaml",
                         "--fault", "failed-after-effect", "--depth", "1", "--format", "json")
    assert code == 0, err
    rows = {r["variant"]: r for r in json.loads(out)}
    assert rows["plain"]["dups"] > 0 and rows["keyed"]["dups"] == 0 and rows["keyed"]["scenarios"] > 0
