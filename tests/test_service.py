"""The world as a real service: an HTTP issue tracker in its own process, over SQLite.

Each test talks to a running service (`ServiceProcess`) with a plain HTTP client, as a loop's tools
would. The Idempotency-Key rules are those of draft-ietf-httpapi-idempotency-key-header-07 and
Stripe's API: a retry under a known key gets the first response again and changes nothing, the
same key with another payload is 422, a retry while the first is still being processed is 409, a
key is kept for the retention and then forgotten. With a control line, the service reports every
event and waits for the harness's word before it answers.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from crashlab.errors import HarnessError
from crashlab.service import control
from crashlab.service.process import ServiceProcess
from crashlab.service.store import SERVICE_FILE, Store

from .conftest import ROOT


class Api:
    """A loop's tools, as plain HTTP calls to one service."""

    def __init__(self, service: ServiceProcess):
        self.service = service
        self.http = httpx.Client(base_url=service.url, trust_env=False, timeout=20)

    def issue(self, title: str, body: str | None = None, key: str | None = None) -> httpx.Response:
        payload = {"title": title} if body is None else {"title": title, "body": body}
        return self.http.post("/issues", json=payload, headers=keyed(key))

    def comment(self, issue: int | str, body: str, key: str | None = None) -> httpx.Response:
        return self.http.post(f"/issues/{issue}/comments", json={"body": body}, headers=keyed(key))

    def lookup(self, key: str) -> httpx.Response:
        return self.http.get(f"/idempotency/{key}")

    def records(self) -> list[dict[str, Any]]:
        return self.service.state()["records"]

    def close(self) -> None:
        self.http.close()


def keyed(key: str | None) -> dict[str, str]:
    return {} if key is None else {"Idempotency-Key": key}


@pytest.fixture(scope="module")
def services(tmp_path_factory) -> Iterator[Callable[..., Api]]:
    """One service per setting, started once for the module; each test gets it reset."""
    started: dict[tuple, Api] = {}

    def get(tracker: str = "keyed", keys: str = "optional") -> Api:
        if (tracker, keys) not in started:
            directory = tmp_path_factory.mktemp(f"{tracker}-{keys}")
            started[tracker, keys] = Api(ServiceProcess.start(directory, tracker, keys, control=False))
        api = started[tracker, keys]
        api.service.reset()
        return api

    yield get
    for api in started.values():  # all told at once: each takes a few tenths of a second to stop
        api.close()
        api.service.process.terminate()
    for api in started.values():
        api.service.close()


@pytest.fixture
def api(services) -> Api:
    return services("keyed")


# Records and numbering.


def test_issues_and_comments_are_each_numbered_from_one_and_state_lists_them_in_commit_order(api):
    assert api.issue("Login fails", "blank page").json() == {"number": 1}
    assert api.issue("Export is slow").json() == {"number": 2}
    answer = api.comment(1, "seen on staging too")
    assert (answer.status_code, answer.json()) == (201, {"number": 1})
    assert api.comment(2, "and on prod").json() == {"number": 2}
    assert api.service.state() == {
        "tracker": "keyed",
        "records": [
            {"kind": "issue", "number": 1, "issue": None, "title": "Login fails", "body": "blank page", "key": None},
            {"kind": "issue", "number": 2, "issue": None, "title": "Export is slow", "body": "", "key": None},
            {"kind": "comment", "number": 1, "issue": 1, "title": None, "body": "seen on staging too", "key": None},
            {"kind": "comment", "number": 2, "issue": 2, "title": None, "body": "and on prod", "key": None},
        ],
        "asks": 0, "approvals": 0, "model_calls": 0,
    }


def test_a_comment_on_an_issue_that_does_not_exist_is_404_and_changes_nothing(api):
    answer = api.comment(7, "hello", key="c1")
    assert answer.status_code == 404
    assert answer.json() == {"error": "there is no issue #7 to comment on"}
    assert api.records() == []


def test_search_finds_issues_by_title_or_body_whatever_the_case_even_beyond_ascii(api):
    api.issue("ÉCHEC de connexion", "page blanche")
    api.issue("Export is slow", "the CSV takes minutes")
    api.comment(2, "échec here too")  # comments are not searched
    assert api.http.get("/search", params={"q": "échec"}).json() == {
        "issues": [{"number": 1, "title": "ÉCHEC de connexion", "body": "page blanche"}]}
    assert [i["number"] for i in api.http.get("/search", params={"q": "csv"}).json()["issues"]] == [2]
    assert api.http.get("/search", params={"q": "nothing like it"}).json() == {"issues": []}
    assert len(api.records()) == 3, "a search changes nothing"
    missing = api.http.get("/search")
    assert missing.status_code == 400 and "q=" in missing.json()["error"]


# The Idempotency-Key header, tracker keyed.


def test_a_retry_under_the_same_key_gets_the_first_response_again_and_changes_nothing(api):
    first = api.issue("Login fails", "blank page", key="k1")
    again = api.issue("Login fails", "blank page", key="k1")
    assert (first.status_code, first.json()) == (again.status_code, again.json()) == (201, {"number": 1})
    assert "idempotent-replayed" not in first.headers
    assert again.headers["Idempotent-Replayed"] == "true"
    assert [(r["number"], r["key"]) for r in api.records()] == [(1, "k1")]


def test_a_comment_retried_under_its_key_is_replayed_too(api):
    api.issue("Login fails")
    assert api.comment(1, "on it", key="c1").json() == api.comment(1, "on it", key="c1").json() == {"number": 1}
    assert len(api.records()) == 2


def test_the_key_may_come_as_the_drafts_quoted_string(api):
    api.issue("Login fails", key="k1")
    again = api.http.post("/issues", json={"title": "Login fails"}, headers={"Idempotency-Key": '"k1"'})
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(api.records()) == 1


def test_the_same_key_with_another_payload_is_422_and_changes_nothing(api):
    api.issue("Login fails", "blank page", key="k1")
    other = api.issue("Login fails", "another body", key="k1")
    assert other.status_code == 422
    assert "first used for another request" in other.json()["error"]
    assert api.comment(1, "a comment", key="k1").status_code == 422, "one key names one request, not one per route"
    assert len(api.records()) == 1


def test_a_payload_is_the_same_whether_the_default_body_is_sent_or_not(api):
    api.issue("Login fails", key="k1")
    assert api.issue("Login fails", "", key="k1").headers["Idempotent-Replayed"] == "true"


def test_a_refused_request_keeps_its_refusal_under_its_key_and_a_new_key_may_succeed(api):
    """The refusal is the request's response: resent, or landing late from a dead client, the same request is
    refused again, though the issue was made since; only a new request, under a new key, finds it."""
    assert api.comment(1, "too early", key="c1").status_code == 404
    api.issue("Login fails")
    again = api.comment(1, "too early", key="c1")
    assert again.status_code == 404 and "no issue #1" in again.json()["error"]
    assert api.lookup("c1").json() == {"status": 404, "body": {"error": "there is no issue #1 to comment on"}}
    fixed = api.comment(1, "too early", key="c2")
    assert (fixed.status_code, fixed.json()) == (201, {"number": 1})
    assert [r["kind"] for r in api.records()] == ["issue", "comment"]


@pytest.mark.parametrize(("hours", "applied"), [(23, False), (25, True)])
def test_a_key_is_kept_for_the_retention_by_the_services_own_clock(api, hours, applied):
    api.issue("Login fails", key="k1")
    api.service.advance(hours)
    again = api.issue("Login fails", key="k1")
    assert again.json() == {"number": 2 if applied else 1}
    assert ("idempotent-replayed" in again.headers) is not applied
    assert len(api.records()) == (2 if applied else 1)
    if applied:  # the key now holds the new response, and is kept anew
        assert api.lookup("k1").json() == {"status": 201, "body": {"number": 2}}
        assert api.issue("Login fails", key="k1").headers["Idempotent-Replayed"] == "true"


def test_a_lookup_answers_the_kept_response_or_404(api):
    api.issue("Login fails", key="k1")
    assert api.lookup("k1").json() == {"status": 201, "body": {"number": 1}}
    unknown = api.lookup("k2")
    assert unknown.status_code == 404 and "k2" in unknown.json()["error"]
    assert api.issue("Export is slow", key="k2").json() == {"number": 2}, "keyed: a lookup fences nothing"


def test_twenty_concurrent_requests_under_one_key_make_one_record(api):
    barrier = threading.Barrier(20)

    def post(_: int) -> httpx.Response:
        with httpx.Client(base_url=api.service.url, trust_env=False, timeout=20) as http:
            barrier.wait()
            return http.post("/issues", json={"title": "Login fails"}, headers=keyed("k1"))

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(post, range(20)))
    assert {a.status_code for a in answers} <= {201, 409}
    assert {a.json()["number"] for a in answers if a.status_code == 201} == {1}
    assert len(api.records()) == 1


# The other trackers, and keys required.


def test_keys_required_refuses_a_change_without_a_key(services):
    api = services("keyed", "required")
    refused = api.issue("Login fails")
    assert refused.status_code == 400 and "Idempotency-Key" in refused.json()["error"]
    assert api.issue("Login fails", key="k1").status_code == 201
    assert api.comment(1, "on it").status_code == 400
    assert api.http.get("/search", params={"q": "login"}).status_code == 200, "a read needs no key"
    assert len(api.records()) == 1


def test_a_lookup_tracker_applies_every_repeat_but_keeps_each_keys_first_response(services):
    api = services("lookup")
    assert [api.issue("Login fails", key="k1").json()["number"] for _ in range(2)] == [1, 2]
    assert "idempotent-replayed" not in api.issue("Login fails", key="k1").headers
    assert api.issue("Other", key="k1").status_code == 201, "keys are not honoured, so nothing is 422"
    assert api.lookup("k1").json() == {"status": 201, "body": {"number": 1}}
    assert api.lookup("k2").status_code == 404
    assert api.issue("Export is slow", key="k2").status_code == 201, "lookup: a lookup fences nothing"
    assert [r["key"] for r in api.records()] == ["k1", "k1", "k1", "k1", "k2"]


def test_a_fencing_tracker_refuses_a_request_under_a_key_its_lookup_did_not_find(services):
    api = services("fencing")
    api.issue("Login fails", key="k1")
    assert api.lookup("k1").status_code == 200
    assert api.issue("Login fails", key="k1").status_code == 201, "a found key is not fenced; repeats apply"
    missed = api.lookup("k2")
    assert missed.status_code == 404 and "fenced" in missed.json()["error"]
    late = api.issue("Export is slow", key="k2")
    assert late.status_code == 409 and "fenced" in late.json()["error"]
    assert api.comment(1, "late", key="k2").status_code == 409
    assert len(api.records()) == 2


def test_a_fencing_lookup_that_finds_a_kept_refusal_fences_its_key(services):
    """A fencing service honours no key: only the fence keeps the refused comment's late arrival out."""
    api = services("fencing")
    assert api.comment(1, "too early", key="c1").status_code == 404
    found = api.lookup("c1")
    assert (found.status_code, found.json()["status"], found.json()["fenced"]) == (200, 404, True)
    api.issue("Login fails")
    assert api.comment(1, "too early", key="c1").status_code == 409
    assert [r["kind"] for r in api.records()] == ["issue"]


def test_a_keyless_tracker_ignores_keys_and_has_none_to_look_up(services):
    api = services("keyless")
    assert [api.issue("Login fails", key="k1").json()["number"] for _ in range(2)] == [1, 2]
    assert api.issue("Other", key="k1").status_code == 201
    lookup = api.lookup("k1")
    assert lookup.status_code == 501 and "keyless" in lookup.json()["error"]
    assert [r["key"] for r in api.records()] == ["k1", "k1", "k1"], "the record still says what key it came with"


# The person, the model's counter, and the harness's controls.


def test_the_person_answers_from_the_records_and_counts_every_question(api):
    api.issue("Login fails", key="k1")
    api.comment(1, "on it")
    ask = lambda question: api.http.post("/person/questions", json=question).json()  # noqa: E731
    assert ask({"title": "Login fails"}) == {"happened": True, "numbers": [1]}
    assert ask({"title": "Export is slow"}) == {"happened": False, "numbers": []}
    assert ask({"issue": 1, "body": "on it"}) == {"happened": True, "numbers": [1]}
    assert ask({"issue": 1, "body": "not said"}) == {"happened": False, "numbers": []}
    approval = api.http.post("/person/approvals", json={"action": "close issue 1"})
    assert (approval.status_code, approval.json()) == (200, {"approved": True})
    state = api.service.state()
    assert (state["asks"], state["approvals"]) == (4, 1)


def test_each_model_call_a_loop_reports_is_counted(api):
    assert [api.http.post("/model/calls").json() for _ in range(2)] == [{"calls": 1}, {"calls": 2}]
    assert api.http.post("/model/calls", json={"tokens": 120}).json() == {"calls": 3}
    assert api.service.state()["model_calls"] == 3


def test_reset_empties_records_keys_counts_fences_and_the_clock(services):
    api = services("fencing")
    api.issue("Login fails", key="k1")
    api.lookup("k2")
    api.http.post("/person/questions", json={"title": "Login fails"})
    api.http.post("/model/calls")
    api.service.advance(23)
    api.service.reset()
    assert api.service.state() == {"tracker": "fencing", "records": [], "asks": 0, "approvals": 0, "model_calls": 0}
    assert api.lookup("k1").status_code == 404
    assert api.issue("Export is slow", key="k2").status_code == 201, "the fence went with the reset"
    api.service.advance(2)  # had the clock kept its 23 hours, k2 would now be 25 hours old
    assert api.issue("Export is slow", key="k2").status_code == 201


def test_the_clock_moves_only_forward_by_a_number_of_hours(api):
    for bad in ({"advance_hours": -1}, {"advance_hours": "1"}, {"advance_hours": True}, {}, {"hours": 1}):
        answer = api.http.post("/_crashlab/clock", json=bad, headers={"Authorization": f"Bearer {api.service.token}"})
        assert answer.status_code == 400, bad
    with pytest.raises(HarnessError, match="400"):
        api.service.advance(float("nan"))


# Hostile input: a clear 4xx, never a 500.

HOSTILE = [
    ("POST", "/issues", b"{not json", {}, 400, "not JSON"),
    ("POST", "/issues", b"", {}, 400, "empty"),
    ("POST", "/issues", b"[1, 2]", {}, 400, "JSON object"),
    ("POST", "/issues", b'"title"', {}, 400, "JSON object"),
    ("POST", "/issues", b'{"title": 7}', {}, 400, "title must be a string, not a number"),
    ("POST", "/issues", b'{"title": null}', {}, 400, "title must be a string, not null"),
    ("POST", "/issues", b'{"title": "t", "body": ["b"]}', {}, 400, "body must be a string"),
    ("POST", "/issues", b'{"body": "b"}', {}, 400, "missing field 'title'"),
    ("POST", "/issues", b'{"title": "t", "labels": []}', {}, 400, "unknown field 'labels'"),
    ("POST", "/issues", b'{"title": "\\ud800"}', {}, 400, "lone surrogate"),
    ("POST", "/issues", b"\xff\xfe{}", {}, 400, "not JSON"),
    ("POST", "/issues", b"[" * 100_000, {}, 400, "not JSON"),
    ("POST", "/issues", b'{"title": 1' + b"0" * 5000 + b"}", {}, 400, "not JSON"),
    ("POST", "/issues", json.dumps({"title": "t" * 70_000}).encode(), {}, 400, "more than 65536"),
    ("POST", "/issues", json.dumps({"title": "t", "body": "b" * 2_000_000}).encode(), {}, 413, "more than"),
    ("POST", "/issues", b'{"title": "t"}', {"Idempotency-Key": "k" * 256}, 400, "1 to 255 characters"),
    ("POST", "/issues", b'{"title": "t"}', {"Idempotency-Key": ""}, 400, "1 to 255 characters"),
    ("POST", "/issues/abc/comments", b'{"body": "b"}', {}, 400, "positive integer"),
    ("POST", "/issues/0/comments", b'{"body": "b"}', {}, 400, "positive integer"),
    ("POST", f"/issues/{2**70}/comments", b'{"body": "b"}', {}, 400, "positive integer"),
    ("POST", "/issues/1/comments", b'{"body": 1}', {}, 400, "body must be a string"),
    ("GET", "/idempotency/" + "k" * 300, b"", {}, 400, "1 to 255 characters"),
    ("POST", "/person/questions", b"{}", {}, 400, "a question names"),
    ("POST", "/person/questions", b'{"issue": "1", "body": "b"}', {}, 400, "positive integer"),
    ("POST", "/person/questions", b'{"title": "t", "issue": 1}', {}, 400, "unknown field 'issue'"),
    ("POST", "/person/approvals", b'{"action": false}', {}, 400, "action must be a string"),
    ("POST", "/model/calls", b"[]", {}, 400, "JSON object"),
    ("GET", "/issues", b"", {}, 405, "method not allowed"),
    ("GET", "/no/such/route", b"", {}, 404, "not found"),
]


@pytest.mark.parametrize(("method", "path", "content", "headers", "status", "says"), HOSTILE,
                         ids=[f"{m} {p[:30]} {c[:20]!r}" for m, p, c, *_ in HOSTILE])
def test_hostile_input_is_refused_with_a_clear_one_line_error_never_a_500(api, method, path, content, headers,
                                                                          status, says):
    answer = api.http.request(method, path, content=content, headers={"Content-Type": "application/json", **headers})
    assert answer.status_code == status
    error = answer.json()["error"]
    assert says in error and "\n" not in error and len(error) < 400
    assert api.records() == []


# The control line: every event reported, and the answer held until the harness says go.


class Harness(threading.Thread):
    """The harness's end of a control line, in a thread: it keeps every frame, answers each with go,
    and holds the first frame `hold` picks until the test releases it."""

    def __init__(self, line: socket.socket):
        super().__init__(daemon=True)
        self.line = line
        self.expect()

    def expect(self, hold: Callable[[dict], bool] = lambda frame: False,
               word: Callable[[dict], dict] = lambda frame: control.GO) -> None:
        """Start afresh: no frames yet, `hold` picks the frame to hold, and `word` answers each."""
        self.hold, self.word = hold, word
        self.frames: list[dict] = []
        self.holding, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        while True:
            try:
                frame = control.receive(self.line)
            except (control.LineBroken, OSError):
                return
            self.frames.append(frame)
            if not self.holding.is_set() and self.hold(frame):
                self.holding.set()
                self.release.wait()
            try:
                control.send(self.line, self.word(frame))
            except OSError:
                return


def with_line(directory: Path, **options: Any) -> tuple[Api, Harness]:
    service = ServiceProcess.start(directory, control=True, **options)
    assert service.control is not None
    harness = Harness(service.control)
    harness.start()
    return Api(service), harness


@pytest.fixture(scope="module")
def line_service(tmp_path_factory) -> Iterator[tuple[Api, Harness]]:
    api, harness = with_line(tmp_path_factory.mktemp("lined"))
    yield api, harness
    api.close()
    api.service.close()


@pytest.fixture
def lined(line_service) -> Iterator[tuple[Api, Harness]]:
    """A service with a control line whose harness holds the first create_issue frame until released."""
    api, harness = line_service
    api.service.reset()
    harness.expect(hold=lambda frame: frame["label"] == "create_issue")
    yield api, harness
    harness.release.set()


def test_every_event_is_reported_on_the_control_line_before_its_answer_and_controls_are_not(lined):
    api, harness = lined
    harness.release.set()  # hold nothing
    api.issue("Login fails", key="k1")
    api.issue("Login fails", key="k1")
    api.issue("Other", key="k1")
    api.http.get("/search", params={"q": "login"})
    api.lookup("k1")
    api.lookup("k2")
    api.comment(1, "on it")
    api.http.post("/person/questions", json={"title": "Login fails"})
    api.http.post("/person/approvals", json={"action": "close #1"})
    api.http.post("/model/calls")
    api.service.state()
    api.service.advance(1)
    api.service.reset()
    assert harness.frames == [
        {"kind": "request", "label": "create_issue", "point": "accepted",
         "detail": {"call": "'Login fails'", "key": "k1", "applied": True, "answer": 1, "status": 201}},
        {"kind": "request", "label": "create_issue", "point": "accepted",
         "detail": {"call": "'Login fails'", "key": "k1", "applied": False, "answer": 1, "status": 201}},
        {"kind": "refused", "label": "create_issue",
         "detail": {"status": 422, "key": "k1", "contract": True,
                    "why": "key 'k1' was first used for another request: a key names one request, send this one "
                           "under a new key"}},
        {"kind": "request", "label": "search", "detail": {"call": "'login'", "query": "login", "key": None, "applied": False,
                                                         "answer": [1]}},
        {"kind": "lookup", "label": "key", "detail": {"key": "k1", "answer": 1, "fenced": False}},
        {"kind": "lookup", "label": "key", "detail": {"key": "k2", "answer": None, "fenced": False}},
        {"kind": "request", "label": "comment", "point": "accepted",
         "detail": {"call": "on #1", "key": None, "applied": True, "answer": 1, "status": 201}},
        {"kind": "ask", "label": "person",
         "detail": {"title": "Login fails", "question": "was the issue 'Login fails' filed?", "happened": True,
                    "numbers": [1], "asks": 1, "answer": 1, "truth": 1}},
        {"kind": "approval", "label": "person", "detail": {"call": "close #1", "action": "close #1", "approved": True,
                                                           "decided_now": True, "approvals": 1}},
        {"kind": "model", "label": "call", "detail": {"calls": 1, "call_count": 1, "reply": "(the loop's own)"}},
    ]


def test_the_answer_waits_for_the_harness_but_the_record_is_committed_before_it(lined):
    api, harness = lined
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(api.issue, "Login fails", None, "k1")
        assert harness.holding.wait(10)
        assert [r["number"] for r in api.records()] == [1], "committed at the crash point accepted"
        assert not first.done(), "the answer waits for the harness's go"
        harness.release.set()
        assert first.result(10).json() == {"number": 1}


def test_a_retry_while_the_first_request_is_held_at_the_control_line_is_409(lined):
    api, harness = lined
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(api.issue, "Login fails", None, "k1")
        assert harness.holding.wait(10)
        retry = pool.submit(api.issue, "Login fails", None, "k1")
        time.sleep(0.5)  # the retry reaches the service, which refuses it and waits to report that
        harness.release.set()
        assert (first.result(10).status_code, retry.result(10).status_code) == (201, 409)
    assert "still being processed" in retry.result().json()["error"]
    assert harness.frames[1] == {"kind": "refused", "label": "create_issue",
                                 "detail": {"status": 409, "key": "k1", "contract": True,
                                            "why": retry.result().json()["error"]}}
    assert api.issue("Login fails", key="k1").headers["Idempotent-Replayed"] == "true", "settled: now a replay"
    assert len(api.records()) == 1


def test_when_the_control_line_closes_the_service_stops_and_its_held_answer_is_503(tmp_path):
    api, harness = with_line(tmp_path / "service")
    harness.expect(hold=lambda frame: frame["label"] == "create_issue")
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(api.issue, "Login fails", None, "k1")
        assert harness.holding.wait(10)
        assert api.service.control is not None
        api.service.control.shutdown(socket.SHUT_RDWR)
        assert held.result(10).status_code == 503
    assert api.service.process.wait(10) == 0
    assert "the line closed" in api.service.stderr()
    store = Store(tmp_path / "service" / SERVICE_FILE)
    assert [(r.title, r.key) for r in store.records()] == [("Login fails", "k1")], "committed before the answer"
    store.close()
    harness.release.set()
    api.close()
    api.service.close()


# The process: its URL, its stop, its directory.


def test_the_records_outlive_a_killed_service_and_one_directory_serves_one_service_at_a_time(tmp_path):
    with ServiceProcess.start(tmp_path, control=False) as first:
        Api(first).issue("Login fails", key="k1")
        with pytest.raises(HarnessError, match="in use by another service"):
            ServiceProcess.start(tmp_path, control=False)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
    second = ServiceProcess.start(tmp_path, control=False)
    assert Api(second).issue("Login fails", key="k1").headers["Idempotent-Replayed"] == "true"
    assert [r["title"] for r in second.state()["records"]] == ["Login fails"]
    second.process.send_signal(signal.SIGTERM)
    assert second.process.wait(10) == 0, "SIGTERM stops it cleanly"
    second.close()


def test_a_service_that_cannot_start_is_a_harness_error_that_says_why(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(HarnessError, match="is a file, not a directory"):
        ServiceProcess.start(tmp_path / "file")


def test_env_tells_a_loop_where_the_service_is(api):
    url = api.service.url
    assert url.startswith("http://127.0.0.1:")
    assert api.service.env() == {
        "CRASHLAB_TRACKER_URL": url, "CRASHLAB_MCP_URL": url + "/mcp",
        "CRASHLAB_PERSON_URL": url + "/person", "CRASHLAB_MODEL_URL": url + "/model"}


def test_crashlab_serve_prints_its_url_first_and_stops_on_sigterm(tmp_path):
    command = [sys.executable, "-m", "crashlab", "serve", "--dir", str(tmp_path / "svc"), "--tracker", "lookup"]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as serve:
        assert serve.stdout is not None
        url = serve.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert "a lookup issue tracker" in serve.stdout.readline()
        assert httpx.post(url + "/issues", json={"title": "t"}, trust_env=False).json() == {"number": 1}
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(10) == 0
        assert serve.stderr is not None and "Traceback" not in serve.stderr.read()


@pytest.mark.parametrize(("args", "says"), [
    (["--dir", "FILE"], "is a file, not a directory"),
    (["--dir", "DIR", "--port", "70000"], "--port 70000 is not a port"),
    (["--dir", "DIR", "--retention", "-1"], "--retention -1.0 is not a number of hours"),
    (["--dir", "DIR/no/such"], "is not a directory"),
])
def test_crashlab_serve_refuses_bad_input_in_one_line(cli, tmp_path, args, says):
    (tmp_path / "FILE").write_text("")
    args = [str(tmp_path / a) if a.startswith(("FILE", "DIR")) else a for a in args]
    code, out, err = cli("serve", *args)
    assert (code, out) == (2, "")
    assert err.startswith("crashlab: error: ") and says in err and err.count("\n") == 1


def test_crashlab_help_imports_no_part_of_the_service_stack():
    probe = ("import sys; from crashlab.cli import cli; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'starlette', 'uvicorn', 'mcp', 'httpx'}))")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout == "[]\n"


# How a request becomes durable: one transaction, two steps, or behind the answer.


def test_an_ack_first_service_writes_behind_its_answer_and_a_kill_before_the_next_request_loses_it(tmp_path):
    first = ServiceProcess.start(tmp_path, control=False, commit="ack-first")
    assert Api(first).issue("Login fails", key="k1").json() == {"number": 1}
    first.kill()
    second = ServiceProcess.start(tmp_path, control=False, commit="ack-first")
    api = Api(second)
    assert api.records() == [], "answered, never written"
    assert api.issue("Login fails", key="k1").json() == {"number": 1}, "so its key is unknown: applied again"
    assert api.issue("Export times out").json() == {"number": 2}, "the next request writes the one before"
    second.kill()
    third = ServiceProcess.start(tmp_path, control=False, commit="ack-first")
    assert [r["title"] for r in third.state()["records"]] == ["Login fails"]
    third.close()


@pytest.mark.parametrize("commit, points", [
    ("one-txn", ["applied", "accepted"]),
    ("two-step", ["applied", "record-committed", "accepted"]),
    ("ack-first", ["applied", "accepted"]),
])
def test_with_commit_points_the_service_passes_one_crash_point_between_each_step(tmp_path, commit, points):
    api, harness = with_line(tmp_path, commit=commit, steps=True)
    try:
        harness.release.set()
        api.issue("Login fails", key="k1")
        assert [f.get("point") or f["label"] for f in harness.frames] == points
    finally:
        api.close()
        api.service.close()


def test_an_unknown_commit_order_is_refused_in_one_line(tmp_path):
    with pytest.raises(HarnessError, match=r"--commit: invalid choice: 'later'"):
        ServiceProcess.start(tmp_path, control=False, commit="later")


@pytest.mark.parametrize("way, kept", [("applied", ["Login fails"]), ("lost", [])])
def test_the_request_whose_reply_does_not_come_in_time_is_a_504_either_way(tmp_path, way, kept):
    service = ServiceProcess.start(tmp_path, control=False, no_reply=f"2-{way}")
    try:
        api = Api(service)
        assert api.issue("Export times out").status_code == 201
        late = api.issue("Login fails", key="k1")
        assert late.status_code == 504 and "may or may not have been applied" in late.json()["error"]
        assert [r["title"] for r in api.records()] == ["Export times out", *kept]
        assert api.issue("Login fails", key="k1").status_code == 201, "the retry is the third request: answered"
    finally:
        service.close()


# Late delivery: a request whose client died at sent stays on the wire until the harness lands it.


@pytest.fixture(scope="module")
def late_services(tmp_path_factory) -> Iterator[Callable[[str], tuple[Api, Harness]]]:
    started: dict[str, tuple[Api, Harness]] = {}

    def get(tracker: str) -> tuple[Api, Harness]:
        if tracker not in started:
            started[tracker] = with_line(tmp_path_factory.mktemp(f"late-{tracker}"), tracker=tracker, late=True)
        api, harness = started[tracker]
        api.service.reset()
        return api, harness

    yield get
    for api, _ in started.values():
        api.close()
        api.service.close()


def on_the_wire(api: Api, harness: Harness) -> None:
    """The client sends A under k1 and dies at sent: the harness answers hold, and nothing of A is known."""
    harness.expect(word=lambda frame: control.HOLD if frame["label"] == "sent" and not harness.frames[:-1]
                   else control.GO)
    assert api.issue("A", key="k1").status_code == 504
    assert harness.frames == [{"kind": "point", "label": "sent", "detail": {"call": "'A'", "key": "k1"}}]
    assert api.records() == []


@pytest.mark.parametrize("tracker, lookup, lands", [
    ("keyed", 404, {"applied": False, "answer": 1, "fenced": False}),  # the resend's key answers it
    ("lookup", 404, {"applied": True, "answer": 2, "fenced": False}),  # a second issue: the late one
    ("fencing", 404, {"applied": False, "answer": None, "fenced": True}),  # its key was fenced by the lookup
])
def test_a_request_held_at_sent_lands_only_when_the_harness_says_after_the_restart_asked_and_resent(
        late_services, tracker, lookup, lands):
    api, harness = late_services(tracker)
    on_the_wire(api, harness)
    assert api.lookup("k1").status_code == lookup, "the restart asks: it has not arrived"
    resend_key = "k1" if tracker != "fencing" else "k1:2"  # a fenced key is retired
    assert api.issue("A", key=resend_key).json() == {"number": 1}
    assert api.service.land() == {"call": "'A'", "key": "k1", "label": "create_issue", **lands}
    assert [r["title"] for r in api.records()] == ["A"] * (2 if lands["applied"] else 1)


def test_the_fenced_lookup_says_so_in_its_body_for_a_client_to_retire_the_key(late_services):
    api, _ = late_services("fencing")
    assert api.lookup("k9").json()["fenced"] is True
    assert api.issue("B", key="k9").status_code == 409


def test_a_keyless_service_applies_the_late_request_whatever_its_key(late_services):
    api, harness = late_services("keyless")
    on_the_wire(api, harness)
    assert api.issue("A", key="k1").json() == {"number": 1}
    assert api.service.land()["answer"] == 2


def test_landing_with_nothing_on_the_wire_is_refused_and_a_reset_empties_the_wire(late_services):
    api, harness = late_services("keyed")
    with pytest.raises(HarnessError, match="no request is on the wire"):
        api.service.land()
    on_the_wire(api, harness)
    api.service.reset()
    with pytest.raises(HarnessError, match="no request is on the wire"):
        api.service.land()


def test_late_needs_a_control_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "crashlab.service", "--dir", str(tmp_path), "--late"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip().startswith("crashlab service: error: --late needs --control-fd")
