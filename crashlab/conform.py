"""`crashlab conform`: does a running service keep a provider's idempotency contract? Probe it and see.

Each probe sends a few requests over plain HTTP, as a client of that provider would (the key under
the profile's own header), and holds the answers to one promise of the `Profile`: a retry under the
same key and payload is a replay, marked as the profile marks one, and makes no second record; the
same key with another payload is refused or answered with the first answer; a retry while the first
is still in flight is refused; a retry after a failure that followed the effect gets what the
profile keeps; a key lives exactly the retention; a missing key and a key the provider does not take
are refused. The draft has no conformance suite; this is one.

Some promises need the service's cooperation to be observed at all, and are probed only where the
service offers it, through crashlab's controls behind its token (``/_crashlab/...``): the records it
holds (``state``: else a second record is judged by a second answer that differs), a request held
in flight (``pause``: two requests at once overlap only by chance, so without it the concurrent
probe is not run), a failure after the effect (``fail``), and its clock (``clock``: else retention
would take a day to probe). A probe a service cannot be put to is reported as not run, never as
kept: a check that cannot be made is not passed.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from crashlab.errors import BadInput
from crashlab.profiles import Profile

Outcome = Literal["kept", "broken", "not run"]
#: Where crashlab's service keeps its controls.
CONTROLS = "/_crashlab"
#: How far either side of the retention the retention probe moves the clock, in hours: a minute.
EDGE = 1 / 60
#: The age the retention probe gives a key a profile keeps for ever: ten years.
FOREVER = 87600.0
#: Each request's limit, in seconds: a paused request's retry waits on nothing, but a slow service may be slow.
TIMEOUT = 20.0


@dataclass(frozen=True)
class Verdict:
    """One probe's result: whether the promise was kept, and what was seen, in one line."""

    probe: str
    outcome: Outcome
    evidence: str

    def as_json(self) -> dict[str, str]:
        return {"probe": self.probe, "outcome": self.outcome, "evidence": self.evidence}


class Checks:
    """A probe's observations: each a condition and what it says; broken at the first that fails."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.failed: str | None = None

    def see(self, what: str) -> None:
        self.seen.append(what)

    def hold(self, condition: bool, expected: str) -> bool:
        if not condition and self.failed is None:
            self.failed = expected
        return condition

    def verdict(self, probe: str) -> Verdict:
        seen = "; ".join(self.seen)
        if self.failed is not None:
            return Verdict(probe, "broken", f"expected {self.failed}: {seen}")
        return Verdict(probe, "kept", seen)


def said(response: httpx.Response, marker: str | None = None) -> str:
    """A response in a few words: its status, its body cut short, and the replay marker if it carries it."""
    found = body_of(response)
    body = " ".join(response.text.split())
    if isinstance(found, dict) and isinstance(found.get("code"), str):
        body = f"code {found['code']}"  # what a client acts on, rather than the message's first words
    body = body if len(body) <= 60 else body[:57] + "..."
    marked = f" +{marker}" if marker and marker in response.headers else ""
    return f"{response.status_code} {body}{marked}"


def success(response: httpx.Response) -> bool:
    return 200 <= response.status_code < 300


def body_of(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


class Prober:
    """The probes of one profile against one service, each under keys and titles of its own."""

    def __init__(self, url: str, profile: Profile, token: str | None = None, path: str = "/issues"):
        self.url = url.rstrip("/")
        self.profile = profile
        self.token = token
        self.path = path
        self.nonce = secrets.token_hex(4)
        self.http = httpx.Client(base_url=self.url, trust_env=False, timeout=TIMEOUT)
        self.controls = False

    def close(self) -> None:
        self.http.close()

    def reach(self) -> None:
        """Refuse, in one line, a URL that nothing answers at; learn whether the service has crashlab's controls."""
        try:
            self.http.get("/")
        except httpx.HTTPError as error:
            raise BadInput(f"cannot reach {self.url}: {' '.join(str(error).split()) or type(error).__name__}") \
                from None
        self.controls = self.records("") is not None

    # The requests a probe sends.

    def key(self, probe: str) -> str:
        return f"conform-{probe}-{self.nonce}"

    def title(self, probe: str) -> str:
        return f"crashlab conform {probe} {self.nonce}"

    def post(self, title: str, key: str | bytes | None, body: str | None = None) -> httpx.Response:
        payload = {"title": title} if body is None else {"title": title, "body": body}
        headers: dict[str, str] | dict[bytes, bytes] = {}
        if isinstance(key, bytes):  # a key beyond ASCII, as the bytes a client would send
            headers = {self.profile.header.encode(): key}
        elif key is not None:
            headers = {self.profile.header: key}
        return self.http.post(self.path, json=payload, headers=headers)

    def control(self, method: str, name: str, payload: dict[str, Any] | None = None) -> httpx.Response | None:
        """One of crashlab's controls; None if there is no token, or the service has no such control."""
        if self.token is None:
            return None
        response = self.http.request(method, f"{CONTROLS}/{name}", json=payload,
                                     headers={"Authorization": f"Bearer {self.token}"})
        return response if response.status_code not in (401, 403, 404, 405) else None

    def records(self, title: str) -> int | None:
        """How many records the service holds with this title; None if it does not say."""
        response = self.control("GET", "state")
        if response is None or not success(response):
            return None
        try:
            records = response.json()["records"]
            return sum(1 for record in records if record.get("title") == title)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def count(self, checks: Checks, title: str, expected: int) -> None:
        """Hold the records made under `title` to `expected`, where the service says how many it holds."""
        made = self.records(title)
        if made is not None:
            checks.see(f"{made} record{'s' if made != 1 else ''}")
            checks.hold(made == expected, f"{expected} record{'s' if expected != 1 else ''}")

    def marked(self, checks: Checks, again: httpx.Response, first: httpx.Response) -> None:
        """The replay carries the profile's marker, and the first answer does not."""
        header = self.profile.replayed_header
        if header is not None:
            checks.hold(header in again.headers and header not in first.headers,
                        f"the replay, and only it, marked {header}")

    # The probes, each a promise.

    def replay(self) -> Verdict:
        title, key = self.title("replay"), self.key("replay")
        first, again = self.post(title, key), self.post(title, key)
        checks = Checks()
        checks.see(f"{said(first, self.profile.replayed_header)}, then {said(again, self.profile.replayed_header)}")
        checks.hold(success(first), "the first request applied (2xx)")
        if not self.profile.honours_keys:
            checks.hold(success(again) and (self.controls or body_of(again) != body_of(first)),
                        "the retry applied again (a key is ignored)")
            self.count(checks, title, 2)
            return checks.verdict("replay")
        checks.hold((again.status_code, body_of(again)) == (first.status_code, body_of(first)),
                    "the retry answered the first answer")
        self.marked(checks, again, first)
        self.count(checks, title, 1)
        return checks.verdict("replay")

    def other_payload(self) -> Verdict:
        title, key = self.title("other-payload"), self.key("other-payload")
        first, other = self.post(title, key), self.post(title, key, body="another payload under the same key")
        checks = Checks()
        checks.see(f"{said(first)}, then another payload: {said(other)}")
        checks.hold(success(first), "the first request applied (2xx)")
        if not self.profile.honours_keys:
            checks.hold(success(other), "the other payload applied (a key is ignored)")
            self.count(checks, title, 2)
        elif self.profile.other_payload == "replayed":
            checks.hold((other.status_code, body_of(other)) == (first.status_code, body_of(first)),
                        "the first answer, for another payload")
            self.count(checks, title, 1)
        else:
            self.refused(checks, other, self.profile.other_payload_status, "other-payload")
            self.count(checks, title, 1)
        return checks.verdict("other-payload")

    def refused(self, checks: Checks, response: httpx.Response, status: int, case: str) -> None:
        """`response` is the refusal the profile names for `case`: its status, and its error code if it names one."""
        code = self.profile.code(case)
        checks.hold(response.status_code == status, f"{status}" + (f" {code}" if code else ""))
        if code is not None:
            found = body_of(response)
            checks.hold(isinstance(found, dict) and code in (found.get("code"), found.get("error")),
                        f"the code {code} in the body")

    def concurrent(self) -> Verdict:
        title, key = self.title("concurrent"), self.key("concurrent")
        with self.paused() as pause:
            if pause is None:
                return Verdict("concurrent", "not run", "the service holds no request in flight on demand "
                               "(crashlab's /_crashlab/pause, behind --token): two requests at once overlap only "
                               "by chance")
            with ThreadPoolExecutor(2) as pool:
                held = pool.submit(self.post, title, key)
                caught = pool.submit(pause)
                either: list[Future[Any]] = [held, caught]
                wait(either, return_when=FIRST_COMPLETED)  # answered unpaused (refused), or held in flight
                retry = self.post(title, key) if caught.done() and caught.result() else None
                self.control("DELETE", "pause")
                first = held.result()
        checks = Checks()
        if retry is None:
            return Verdict("concurrent", "broken", f"expected the first request held in flight: {said(first)}")
        checks.see(f"a retry while the first is in flight: {said(retry)}; the first: {said(first)}")
        checks.hold(success(first), "the first request applied (2xx)")
        if not self.profile.honours_keys:
            checks.hold(success(retry), "the retry applied too (a key is ignored)")
            self.count(checks, title, 2)
            return checks.verdict("concurrent")
        self.refused(checks, retry, self.profile.in_flight_status, "in-flight")
        if self.profile.retry_after:
            checks.hold("retry-after" in retry.headers, "a Retry-After header")
        self.count(checks, title, 1)
        return checks.verdict("concurrent")

    @contextmanager
    def paused(self) -> Iterator[Callable[[], bool] | None]:
        """Arm the service's pause; what waits for a request to be caught by it (None if it has none). The pause
        is disarmed on the way out, whatever happened."""
        armed = self.control("POST", "pause") if self.controls else None
        if armed is None or not success(armed):
            yield None
            return
        try:
            yield lambda: self.caught(self.control("GET", "pause"))
        finally:
            self.control("DELETE", "pause")

    @staticmethod
    def caught(response: httpx.Response | None) -> bool:
        """Whether the pause caught a request (not if it was resumed before one came)."""
        found = None if response is None or not success(response) else body_of(response)
        return isinstance(found, dict) and found.get("paused") is True

    def failure(self) -> Verdict:
        title, key = self.title("5xx-then-retry"), self.key("5xx-then-retry")
        armed = self.control("POST", "fail") if self.controls else None
        if armed is None or not success(armed):
            return Verdict("5xx-then-retry", "not run", "the service cannot be told to fail after its effect "
                           "(crashlab's /_crashlab/fail and /_crashlab/state, behind --token)")
        first = self.post(title, key)
        made = self.records(title)
        retry = self.post(title, key)
        after = self.profile.after_failure if self.profile.honours_keys else "run-again"
        checks = Checks()
        checks.see(f"told to fail after its effect: {said(first)} ({made} record{'s' if made != 1 else ''}); "
                   f"the retry: {said(retry, self.profile.replayed_header)}")
        checks.hold(first.status_code >= 500 and made == 1, "a 5xx with its record made")
        if after == "replay-failure":
            checks.hold(retry.status_code == first.status_code, "the failure replayed")
            self.count(checks, title, 1)
        elif after == "run-again":
            checks.hold(success(retry), "the retry run again (2xx)")
            self.count(checks, title, 2)
        else:
            checks.hold(success(retry), "the effect's success (2xx)")
            self.count(checks, title, 1)
        return checks.verdict("5xx-then-retry")

    def missing_key(self) -> Verdict:
        title = self.title("missing-key")
        response = self.post(title, None)
        checks = Checks()
        checks.see(f"no key: {said(response)}")
        if self.profile.key_required:
            self.refused(checks, response, 400, "no-key")
            self.count(checks, title, 0)
        else:
            checks.hold(success(response), "applied (2xx): a key is optional")
        return checks.verdict("missing-key")

    def malformed_key(self) -> Verdict:
        if not self.profile.honours_keys:
            return Verdict("malformed-key", "not run", "the profile honours no key, so says nothing of its form")
        longest = self.profile.max_key
        prefix = f"conform-{self.nonce}-"
        edge = (prefix + "k" * longest)[:longest]
        titles = [self.title(f"{name}-key") for name in ("longest", "too-long", "non-ascii")]
        fits = self.post(titles[0], edge)
        long = self.post(titles[1], edge + "k")
        foreign = self.post(titles[2], f"{prefix}clé".encode())
        checks = Checks()
        checks.see(f"{longest} characters: {said(fits)}; {longest + 1}: {said(long)}; beyond ASCII: {said(foreign)}")
        checks.hold(success(fits), f"a key of {longest} characters taken")
        checks.hold(long.status_code == 400, f"400 for a key of {longest + 1} characters")
        checks.hold(foreign.status_code == 400, "400 for a key beyond ASCII")
        made = [self.records(title) for title in titles[1:]]
        if None not in made:
            checks.see(f"{sum(n or 0 for n in made)} records under the refused keys")
            checks.hold(made == [0, 0], "no record under a refused key")
        return checks.verdict("malformed-key")

    def retention(self) -> Verdict:
        if not self.profile.honours_keys:
            return Verdict("retention", "not run", "the profile honours no key, so keeps none")
        title, key = self.title("retention"), self.key("retention")
        hours = self.profile.retention
        if not self.controls or self.control("POST", "clock", {"advance_hours": 0}) is None:
            return Verdict("retention", "not run", "the service's clock cannot be moved (crashlab's "
                           "/_crashlab/clock and /_crashlab/state, behind --token)")
        first = self.post(title, key)
        before = (FOREVER if hours is None else hours) - EDGE
        self.control("POST", "clock", {"advance_hours": before})
        within = self.post(title, key)
        kept = self.records(title)
        checks = Checks()
        checks.see(f"{before:g} h on: {said(within)} ({kept} record{'s' if kept != 1 else ''})")
        checks.hold(success(first) and (within.status_code, body_of(within)) == (first.status_code, body_of(first))
                    and kept == 1, "a replay within the retention")
        if hours is not None:
            self.control("POST", "clock", {"advance_hours": 2 * EDGE})
            past = self.post(title, key)
            checks.see(f"{hours + EDGE:g} h on: {said(past)}")
            checks.hold(success(past), "applied anew past the retention")
            self.count(checks, title, 2)
        return checks.verdict("retention")

    def probes(self) -> Iterator[Verdict]:
        """Every probe, the one that moves the service's clock last."""
        yield self.replay()
        yield self.other_payload()
        yield self.concurrent()
        yield self.failure()
        yield self.missing_key()
        yield self.malformed_key()
        yield self.retention()


def conform(url: str, profile: Profile, token: str | None = None, path: str = "/issues") -> list[Verdict]:
    """Probe the service at `url` for `profile`'s promises; a verdict per probe. `BadInput` if nothing answers."""
    if not url.startswith(("http://", "https://")):
        raise BadInput(f"{url!r} is not an http:// or https:// URL")
    prober = Prober(url, profile, token, path)
    try:
        prober.reach()
        return list(prober.probes())
    except httpx.HTTPError as error:
        raise BadInput(f"the service at {url} stopped answering: {' '.join(str(error).split())}") from None
    finally:
        prober.close()


def kept(verdicts: list[Verdict]) -> bool:
    """Whether every probe that ran kept its promise (and one ran at all)."""
    ran = [v for v in verdicts if v.outcome != "not run"]
    return bool(ran) and all(v.outcome == "kept" for v in ran)


def lines(url: str, profile: Profile, verdicts: list[Verdict]) -> list[str]:
    width = max(len(v.probe) for v in verdicts)
    counts = {o: sum(1 for v in verdicts if v.outcome == o) for o in ("kept", "broken", "not run")}
    summary = ", ".join(f"{n} {o}" for o, n in counts.items())
    return [*(f"{v.probe:<{width}}  {v.outcome:<7}  {v.evidence}" for v in verdicts),
            f"{url} {'keeps' if kept(verdicts) else 'does not keep'} the {profile.slug} contract ({summary})"]


def as_json(url: str, profile: Profile, verdicts: list[Verdict]) -> str:
    return json.dumps({"url": url, "profile": profile.slug, "kept": kept(verdicts),
                       "probes": [v.as_json() for v in verdicts]}, indent=2)
