"""The service keeps each provider's idempotency contract: `crashlab serve --profile NAME`.

Each test is one documented difference from the draft's contract (`ietf`, the default, which
tests/test_service.py holds as it always was), seen by a plain HTTP client of a service started
with that profile: the key under the provider's own header, the answer to another payload, to a
retry in flight, to a missing or a long key, how long a key lives, and what a retry gets after a
request that made its effect and then failed (``--failed-after-effect``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from crashlab.profiles import find
from crashlab.service import control
from crashlab.service.process import ServiceProcess
from crashlab.service.store import Store
from crashlab.service.tracker import Service


class Client:
    """A provider's client: its key under the provider's header, and crashlab's controls behind the token."""

    def __init__(self, service: ServiceProcess, header: str = "Idempotency-Key"):
        self.service = service
        self.header = header
        self.http = httpx.Client(base_url=service.url, trust_env=False, timeout=20)

    def issue(self, title: str, key: str | None = None, body: str | None = None) -> httpx.Response:
        payload = {"title": title} if body is None else {"title": title, "body": body}
        return self.http.post("/issues", json=payload, headers={} if key is None else {self.header: key})

    def control(self, method: str, name: str, payload: dict[str, Any] | None = None) -> httpx.Response:
        return self.http.request(method, f"/_crashlab/{name}", json=payload,
                                 headers={"Authorization": f"Bearer {self.service.token}"})

    def titles(self) -> list[str]:
        return [r["title"] for r in self.service.state()["records"]]


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> Iterator[Callable[..., Client]]:
    """One service per profile, started once for the module; each test gets it reset."""
    started: dict[str, Client] = {}

    def get(profile: str, header: str = "Idempotency-Key") -> Client:
        if profile not in started:
            started[profile] = Client(ServiceProcess.start(tmp_path_factory.mktemp(profile), control=False,
                                                           profile=profile))
        client = started[profile]
        client.service.reset()
        client.header = header
        return client

    yield get
    for client in started.values():
        client.http.close()
        client.service.process.terminate()
    for client in started.values():
        client.service.close()


def test_qonto_takes_its_own_header_and_answers_another_payload_with_the_first_answer(profiled):
    qonto = profiled("qonto", "X-Qonto-Idempotency-Key")
    first = qonto.issue("Pay supplier", "k1", body="100 EUR")
    other = qonto.issue("Pay supplier", "k1", body="250 EUR")
    assert (first.status_code, first.json()) == (other.status_code, other.json()) == (201, {"number": 1})
    assert "idempotent-replayed" not in other.headers, "Qonto marks no replay"
    assert qonto.titles() == ["Pay supplier"], "the second payment is never made, and nothing says so"


def test_qonto_requires_a_key_and_forgets_it_after_thirty_minutes(profiled):
    qonto = profiled("qonto", "X-Qonto-Idempotency-Key")
    refused = qonto.issue("Pay supplier")
    assert refused.status_code == 400 and "X-Qonto-Idempotency-Key" in refused.json()["error"]
    qonto.issue("Pay supplier", "k1")
    qonto.service.advance(0.49)
    assert qonto.issue("Pay supplier", "k1").json() == {"number": 1}
    qonto.service.advance(0.02)
    assert qonto.issue("Pay supplier", "k1").json() == {"number": 2}, "31 minutes on, the same request pays again"


def test_the_draft_header_is_taken_under_every_profile_but_two_keys_are_refused(profiled):
    qonto = profiled("qonto", "Idempotency-Key")
    assert qonto.issue("Pay supplier", "k1").json() == qonto.issue("Pay supplier", "k1").json() == {"number": 1}
    both = qonto.http.post("/issues", json={"title": "Pay"},
                           headers={"Idempotency-Key": "k2", "X-Qonto-Idempotency-Key": "k3"})
    assert both.status_code == 400 and "a request has one key" in both.json()["error"]
    ietf = profiled("ietf")
    ietf.http.post("/issues", json={"title": "Pay"}, headers={"X-Qonto-Idempotency-Key": "k1"})
    again = ietf.http.post("/issues", json={"title": "Pay"}, headers={"X-Qonto-Idempotency-Key": "k1"})
    assert again.json() == {"number": 2}, "another provider's header is no key to the draft's service"


def test_worldline_refuses_a_key_of_41_characters_and_marks_a_replay_with_the_first_requests_time(profiled):
    worldline = profiled("worldline", "X-GCS-Idempotence-Key")
    long = worldline.issue("Capture", "k" * 41)
    assert long.status_code == 400 and "1 to 40 characters" in long.json()["error"]
    first = worldline.issue("Capture", "k" * 40)
    again = worldline.issue("Capture", "k" * 40, body="another payload")
    assert first.status_code == 201 and again.json() == first.json(), "another payload: the first outcome"
    assert int(again.headers["X-GCS-Idempotence-Request-Timestamp"]) > 1_700_000_000_000
    assert "x-gcs-idempotence-request-timestamp" not in first.headers
    assert worldline.titles() == ["Capture"]


def held_in_flight(client: Client, title: str, key: str) -> tuple[httpx.Response, httpx.Response]:
    """The first request under `key`, held in flight after its commit by the service's pause, and a retry meanwhile."""
    assert client.control("POST", "pause").json() == {"armed": True}
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(client.issue, title, key)
        assert client.control("GET", "pause").json() == {"paused": True, "key": key}
        retry = client.issue(title, key)
        assert client.control("DELETE", "pause").json() == {"resumed": True}
        return first.result(10), retry


def test_acp_answers_a_retry_in_flight_409_with_its_code_and_retry_after(profiled):
    acp = profiled("acp")
    first, retry = held_in_flight(acp, "Checkout", "k1")
    assert first.status_code == 201
    assert retry.status_code == 409 and retry.json()["code"] == "idempotency_in_flight"
    assert retry.headers["Retry-After"] == "1"
    assert acp.titles() == ["Checkout"]


def test_the_draft_answers_a_retry_in_flight_409_with_no_code_and_no_retry_after(profiled):
    ietf = profiled("ietf")
    _, retry = held_in_flight(ietf, "Checkout", "k1")
    assert retry.status_code == 409 and set(retry.json()) == {"error"} and "retry-after" not in retry.headers


def test_acp_names_its_codes_for_a_missing_key_and_another_payload(profiled):
    acp = profiled("acp")
    missing = acp.issue("Checkout")
    assert missing.status_code == 400
    assert missing.json() == {"error": missing.json()["error"], "code": "idempotency_key_required"}
    acp.issue("Checkout", "k1")
    other = acp.issue("Checkout", "k1", body="another cart")
    assert (other.status_code, other.json()["code"]) == (422, "idempotency_conflict")


def test_stripe_v1_refuses_another_payload_400_idempotency_error(profiled):
    stripe = profiled("stripe-v1")
    stripe.issue("Charge", "k1")
    other = stripe.issue("Charge", "k1", body="another amount")
    assert (other.status_code, other.json()["code"]) == (400, "idempotency_error")


@pytest.mark.parametrize(("profile", "applied"), [("truelayer", False), ("ietf", True)])
def test_truelayers_key_lives_past_48_hours_and_the_drafts_does_not(profiled, profile, applied):
    client = profiled(profile)
    client.issue("Payout", "k1")
    client.service.advance(48)
    again = client.issue("Payout", "k1")
    assert again.json() == {"number": 2 if applied else 1}
    assert len(client.titles()) == (2 if applied else 1)


def test_truelayer_refuses_a_change_without_a_key(profiled):
    assert profiled("truelayer").issue("Payout").status_code == 400


def test_none_applies_every_request_whatever_its_key(profiled):
    none = profiled("none")
    assert [none.issue("Refund", "k1").json()["number"] for _ in range(2)] == [1, 2]
    assert none.issue("Refund", "k1", body="another").status_code == 201
    assert none.titles() == ["Refund"] * 3
    assert none.http.get("/idempotency/k1").status_code == 501, "it keeps no key to look up"


# A request that made its effect and then failed: what the retry under its key gets is the profile's.


@pytest.mark.parametrize(("profile", "retry", "records"), [
    ("stripe-v1", 500, 1),  # the 500 replayed: never twice, never learnt
    ("checkout", 201, 2),  # only a 2xx is kept: the retry runs again
    ("acp", 201, 2),  # a 5xx MUST NOT be kept
    ("qonto", 201, 2),
    ("stripe-v2", 201, 1),  # finished to completion: the retry gets the first number
    ("ietf", 201, 1),
])
def test_after_a_failure_that_followed_the_effect_the_retry_gets_what_the_profile_keeps(profiled, profile, retry,
                                                                                         records):
    client = profiled(profile)
    assert client.control("POST", "fail").json() == {"armed": True}
    failed = client.issue("Charge", "k1")
    assert failed.status_code == 500 and "after making the effect" in failed.json()["error"]
    again = client.issue("Charge", "k1")
    assert again.status_code == retry
    assert client.titles() == ["Charge"] * records
    if retry == 201:
        assert again.json() == {"number": records}, "a replay answers the first number, a run again the second"
    assert client.issue("Other", "k2").status_code == 201, "only the next request fails"


class Harness(threading.Thread):
    """The harness's end of the control line: every frame kept, every one answered go."""

    def __init__(self, line: Any):
        super().__init__(daemon=True)
        self.line = line
        self.frames: list[dict[str, Any]] = []

    def run(self) -> None:
        while True:
            try:
                self.frames.append(control.receive(self.line))
                control.send(self.line, control.GO)
            except (control.LineBroken, OSError):
                return


@pytest.mark.parametrize(("profile", "records"), [("stripe-v1", 1), ("checkout", 2)])
def test_failed_after_effect_k_fails_the_kth_changing_request_and_says_so_on_the_control_line(tmp_path, profile,
                                                                                              records):
    """`ServiceProcess.start(..., profile=SLUG, failed_after=K)`, as a sweep starts it."""
    with ServiceProcess.start(tmp_path, profile=profile, failed_after=2) as service:
        assert service.control is not None
        harness = Harness(service.control)
        harness.start()
        client = Client(service)
        assert client.issue("Triage", "k0").status_code == 201
        assert client.issue("Charge", "k1").status_code == 500
        client.issue("Charge", "k1")
        assert client.titles() == ["Triage", *["Charge"] * records]
        kept = "replay-failure" if profile == "stripe-v1" else "run-again"
        assert harness.frames[1] == {"kind": "request", "label": "create_issue", "point": "accepted", "detail": {
            "call": "'Charge'", "key": "k1", "applied": True, "answer": 2, "status": 500, "kept": kept}}
        # One frame a request, its point: a client that dies at `accepted` hears nothing more, and neither need the
        # harness, so the key leaves the flight with its word. Before, a frame more told the failure and held the key
        # until answered, which a sweep does only once the restart runs: its retry raced it, and got 409 first.
        assert [frame.get("point") for frame in harness.frames] == ["accepted"] * 3
        client.http.close()



def test_an_unknown_profile_is_refused_in_one_line_naming_the_valid_ones(cli, tmp_path):
    code, out, err = cli("serve", "--dir", str(tmp_path / "svc"), "--profile", "stripe")
    assert (code, out) == (2, "")
    assert err.startswith("crashlab: error: unknown profile 'stripe' (valid: ietf, acp,") and err.count("\n") == 1


def test_crashlab_profiles_lists_each_contract_with_its_source(cli):
    code, out, _ = cli("profiles")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[:4] == ["profile", "provider", "retention", "after"]
    by_slug = {row.split()[0]: row for row in rows}
    assert list(by_slug) == ["ietf", "acp", "checkout", "none", "qonto", "stripe-v1", "stripe-v2", "truelayer",
                             "worldline"]
    assert "30 min" in by_slug["qonto"] and "30 days" in by_slug["truelayer"]
    assert "the 500 replayed" in by_slug["stripe-v1"] and "https://docs.stripe.com/idempotency" in by_slug["stripe-v1"]


@pytest.mark.parametrize(("profile", "retention", "kept_for", "says"), [
    ("ietf", None, 24.0, "a keyed issue tracker (keys optional, kept 24 h) over"),
    ("qonto", None, 0.5, "a keyed issue tracker (the qonto contract: keys required, kept 0.5 h) over"),
    ("qonto", 48.0, 48.0, "(the qonto contract: keys required, kept 48 h)"),
    ("none", None, 0.0, "a keyless issue tracker (the none contract: keys optional, no key honoured)"),
])
def test_retention_overrides_the_profiles_and_the_service_says_which_contract_it_keeps(tmp_path, profile, retention,
                                                                                        kept_for, says):
    store = Store(tmp_path / "service.sqlite")
    service = Service(store, retention=retention, profile=find(profile))
    assert service.kept_for == kept_for and says in service.describe()
    store.close()


@pytest.mark.parametrize(("args", "says"), [
    (["--failed-after-effect", "-1"], "--failed-after-effect -1: the changing request that fails is counted from 1"),
    (["--profile", ""], "unknown profile ''"),
])
def test_crashlab_serve_refuses_a_bad_profile_option_in_one_line(cli, tmp_path, args, says):
    code, out, err = cli("serve", "--dir", str(tmp_path / "svc"), *args)
    assert (code, out) == (2, "")
    assert says in err and err.count("\n") == 1
