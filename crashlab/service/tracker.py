"""What each request to the service means: the Idempotency-Key rules, the person, the model's counter.

The rules are a provider's idempotency contract, its `Profile` (by default ``ietf``: those of
draft-ietf-httpapi-idempotency-key-header-07 and Stripe's API). A changing request may carry a key. A
``keyed`` service answers a retry under a known, unexpired key with the first response and changes
nothing; the same key with another payload is a client's mistake (422; Qonto and Worldline answer it
with the first response instead); a retry while the first is still being processed is a conflict
(409). A key is kept the profile's retention by the service's own clock, and after that a repeat is
applied anew. A request told to fail after its effect (``--failed-after-effect``) commits its record
and answers 500, and its key keeps what the profile's ``after_failure`` says. A ``lookup`` service
applies every request but keeps each key's first response for `GET /idempotency/KEY`; a
``fencing`` one also fences a key its lookup did not find, so the request it names can never land
late; a ``keyless`` one keeps nothing, and so does any under a profile that honours no key
(``none``). Only a success is kept under a key: a refused request may be fixed and sent again with the
same key.

Both transports (`app` for plain HTTP, `mcp` for MCP) call the same `Service`, so a key means the
same whichever way a request comes. Every event a sweep must see is reported on the control line
(`line`) before its answer leaves: a changing request right after it commits, its crash point
``accepted``. Under late delivery a changing request also passes ``sent`` as it arrives, before
anything of it is known here: a client that dies there leaves it on the wire, held until the
harness lands it (`land`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from crashlab.profiles import DEFAULT, Profile, find
from crashlab.service.control import HOLD
from crashlab.service.line import Line
from crashlab.service.store import (
    COMMITS,
    COUNTS,
    Change,
    Kept,
    Kind,
    NoSuchIssue,
    Store,
    key_only,
    next_number,
    one_txn,
    record_only,
)
from crashlab.world.tracker import TrackerMode

#: `--keys`: whether a changing request may come without an Idempotency-Key.
KeyRule = Literal["optional", "required"]
KEY_RULES: tuple[KeyRule, ...] = get_args(KeyRule)
#: The longest key kept (Stripe's limit); a longer one is refused, never cut.
MAX_KEY = 255
#: The longest text a field may hold, in characters (GitHub's limit for an issue's body). It also
#: keeps every frame on the control line well under its limit.
MAX_TEXT = 65536
#: SQLite's largest integer: a larger issue number is refused, not sent to the database to overflow.
MAX_NUMBER = 2**63 - 1
#: What a request told to fail after its effect answers (500), and what a contract that keeps failures keeps.
FAILED = {"error": "the service failed after making the effect: whether it was made, this answer does not say"}
#: How long a paused request waits for the harness to resume it, in seconds: a harness that died lets it go.
PAUSE_LIMIT = 30.0


class Refused(Exception):
    """A request the service will not apply: its status and one line that says what and why, with the error
    code and the headers its contract names for the case (ACP's ``idempotency_in_flight``, ``Retry-After``).
    `contract` marks a refusal by the profile's own rules (a key required, too long for it, reused for
    another payload, or in flight), as against one any service would make (a malformed body, no such issue)."""

    def __init__(self, status: int, message: str, code: str | None = None, headers: tuple[tuple[str, str], ...] = (),
                 contract: bool = False):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers
        self.contract = contract

    def body(self) -> dict[str, Any]:
        return {"error": self.message, **({"code": self.code} if self.code else {})}

    def detail(self, key: object) -> dict[str, Any]:
        """The refusal as the control line reports it: with the contract's code and why, where it is the contract's:
        what tells a harness that a loop which then failed was refused by its contract rather than broken
        (`crashlab.runners.served.refused_by`)."""
        said = {"code": self.code, "contract": True, "why": self.message} if self.contract else {}
        return {"status": self.status, "key": key, **{k: v for k, v in said.items() if v is not None}}


@dataclass(frozen=True)
class Answer:
    """What the service answers: a status, a JSON body, whether it is a replay of a kept response, and the
    headers its contract adds (the replay header it names, ``Retry-After``)."""

    status: int
    body: dict[str, Any]
    replayed: bool = False
    headers: tuple[tuple[str, str], ...] = ()


def fingerprint(method: str, path: str, body: dict[str, Any]) -> str:
    """What makes two requests under one key the same request: sha256 of their canonical JSON."""
    canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def json_type(value: object) -> str:
    """A value's type as JSON names it, for an error a client can act on."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def shown(value: object) -> str:
    """A value for an error message: a number as it is (cut short), anything else by its JSON type."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = repr(value)
        return number if len(number) <= 40 else number[:37] + "..."
    return json_type(value)


def fields(payload: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """Refuse a payload with a field missing or one it does not know: a typo is not silently ignored."""
    for name in payload:
        if name not in required and name not in optional:
            raise Refused(400, f"unknown field {name[:40]!r} (expected: {', '.join(required + optional)})")
    for name in required:
        if name not in payload:
            raise Refused(400, f"missing field {name!r}")


def text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise Refused(400, f"{name} must be a string, not {json_type(value)}")
    if len(value) > MAX_TEXT:
        raise Refused(400, f"{name} is {len(value)} characters long, more than {MAX_TEXT}")
    try:
        value.encode()
    except UnicodeEncodeError:
        raise Refused(400, f"{name} is not valid Unicode (it holds a lone surrogate)") from None
    return value


def positive(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Refused(400, f"{name} must be a positive integer, not {shown(value)}")
    if value > MAX_NUMBER:
        raise Refused(400, f"{name} is more than {MAX_NUMBER}")
    return value


def key_fault(key: object, longest: int = MAX_KEY) -> str | None:
    """What makes `key` no Idempotency-Key the service keeps, in one line; None if it is one.

    The draft's key is a structured-field string: printable ASCII, 1 to `longest` characters (`MAX_KEY`,
    or the profile's: Worldline's is 40). Anything else is refused, whichever door it came by, because
    the doors decode bytes apart: a header as Latin-1, a lookup's path and an MCP argument as UTF-8, so
    one key beyond ASCII was two keys, and a retry over MCP filed a second issue (issue 39)."""
    if not isinstance(key, str):
        return f"an idempotency key must be a string, not {json_type(key)}"
    if not key or len(key) > longest:
        return f"an idempotency key must be 1 to {longest} characters long, not {len(key)}"
    if not all(" " <= character <= "~" for character in key):
        return f"an idempotency key is printable ASCII (the draft's structured-field string), not {ascii(key)[:80]}"
    return None


def valid_key(key: object, longest: int = MAX_KEY) -> str:
    """`key`, if it is an Idempotency-Key the service keeps; else `Refused` (400)."""
    fault = key_fault(key, longest)
    if fault is not None:
        raise Refused(400, fault)
    assert isinstance(key, str)
    return key


@dataclass(frozen=True)
class Held:
    """A changing request on the wire: its client died after sending it, and it has not arrived yet."""

    label: str
    kind: Kind
    issue: int | None
    title: str | None
    body: str
    key: str | None
    request: str  # its fingerprint
    what: str  # as a frame names the call


@dataclass
class Pause:
    """The next changing request, kept in flight after its commit until the harness resumes it
    (``/_crashlab/pause``): a retry under its key then meets it there, every time, not by chance. It is
    how `crashlab conform`, which holds no control line, probes a concurrent retry."""

    caught: asyncio.Event = field(default_factory=asyncio.Event)
    go: asyncio.Event = field(default_factory=asyncio.Event)
    holding: bool = False
    key: str | None = None

    async def hold(self, key: str | None) -> None:
        self.holding, self.key = True, key
        self.caught.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.go.wait(), PAUSE_LIMIT)


@dataclass
class Service:
    """The tracker, the person and the model's counter, over one `Store`, reporting on one `Line` (or none)."""

    store: Store
    tracker: TrackerMode = "keyed"
    keys: KeyRule = "optional"
    #: Hours a key is kept, overriding the profile's (``--retention``); None: the profile's.
    retention: float | None = None
    line: Line | None = None
    commit: str = "one-txn"
    #: Whether the service passes its own crash points between the steps of a commit (``applied``,
    #: ``record-committed``): a harness that lets a death there take the service too sees what it loses.
    steps: bool = False
    #: The person answers this question of the service's life wrong (counted from 1; 0: none).
    wrong_at: int = 0
    #: The changing request (counted from 1) whose reply does not come in time, and whether it was applied.
    no_reply: tuple[int, bool] | None = None
    #: The keys of the requests being processed now: added before the commit, removed once the
    #: answer is settled (after the control line's go), so a concurrent retry gets 409.
    in_flight: set[str] = field(default_factory=set)
    #: An ack-first service's writes behind its answers: made when the next request arrives.
    behind: list[Change] = field(default_factory=list)
    #: Whether a changing request passes the crash point ``sent`` as it arrives (late delivery).
    late: bool = False
    #: The requests left on the wire by clients that died at ``sent``, in the order they were sent.
    held: list[Held] = field(default_factory=list)
    #: The idempotency contract a keyed tracker keeps.
    profile: Profile = field(default_factory=lambda: find(DEFAULT))
    #: The changing request (counted from 1) that commits its record and then answers 500 (0: none).
    failed_after: int = 0
    #: Whether the next changing request does so too: the harness asked for it (``/_crashlab/fail``).
    fail_next: bool = False
    #: The next changing request is kept in flight after its commit until the harness resumes it.
    pause: Pause | None = None

    def __post_init__(self) -> None:
        if self.commit not in COMMITS:
            raise ValueError(f"unknown commit order {self.commit!r} (valid: {', '.join(COMMITS)})")
        if not self.profile.honours_keys:
            self.tracker = "keyless"  # a contract that honours no key keeps none, whatever tracker was asked for

    @property
    def kept_for(self) -> float | None:
        """Hours a key is kept: ``--retention``'s, else the profile's (None: for ever)."""
        return self.profile.retention if self.retention is None else self.retention

    @property
    def keys_required(self) -> bool:
        return self.keys == "required" or self.profile.key_required

    def describe(self) -> str:
        keys = "keys required" if self.keys_required else "keys optional"
        kept = "kept for ever" if self.kept_for is None else f"kept {self.kept_for:g} h"
        if not self.profile.honours_keys:
            kept = "no key honoured"
        contract = "" if self.profile.slug == DEFAULT else f"the {self.profile.slug} contract: "
        return f"a {self.tracker} issue tracker ({contract}{keys}, {kept}) over {self.store.path}"

    def key_fault(self, key: object) -> str | None:
        return key_fault(key, self.profile.max_key)

    def valid_key(self, key: object) -> str:
        """`key`, if it is a key the service keeps and the profile takes; a key only the profile's limit refuses
        (Worldline's 40 characters) is the contract's refusal."""
        if key_fault(key) is None and (fault := self.key_fault(key)) is not None:
            raise Refused(400, fault, contract=True)
        return valid_key(key, self.profile.max_key)

    def replay(self, kept: Kept) -> Answer:
        """The response kept under a key, answered again, marked as the profile marks a replay."""
        header = self.profile.replayed_header
        value = "true" if self.profile.replayed_value == "true" else str(round(kept.made * 1000))
        return Answer(kept.status, kept.answer, replayed=True, headers=() if header is None else ((header, value),))

    async def report(self, kind: str, label: str, detail: dict[str, Any], point: str | None = None) -> dict[str, Any]:
        """The event on the line, if there is one; the harness's word."""
        return {} if self.line is None else await self.line.report(kind, label, detail, point)

    async def answer(self, label: str, key: object, work: Callable[[], Awaitable[Answer]]) -> Answer:
        """Do `work`; a refusal is reported on the line (its key if it is one) and becomes the answer."""
        try:
            return await work()
        except Refused as refusal:
            shown = key if self.key_fault(key) is None else None
            await self.report("refused", label, refusal.detail(shown))
            return Answer(refusal.status, refusal.body(), headers=refusal.headers)

    # The tracker's changing requests.

    async def create_issue(self, payload: dict[str, Any], key: object) -> Answer:
        fields(payload, ("title",), ("body",))
        title, body = text(payload["title"], "title"), text(payload.get("body", ""), "body")
        request = fingerprint("POST", "/issues", {"title": title, "body": body})
        return await self._change("create_issue", "issue", None, title, body, key, request)

    async def comment(self, issue: object, payload: dict[str, Any], key: object) -> Answer:
        number = positive(issue, "the issue number")
        fields(payload, ("body",))
        body = text(payload["body"], "body")
        request = fingerprint("POST", f"/issues/{number}/comments", {"body": body})
        return await self._change("comment", "comment", number, None, body, key, request)

    async def _change(self, label: str, kind: Kind, issue: int | None, title: str | None, body: str, key: object,
                      request: str) -> Answer:
        self.catch_up()
        if key is None and self.keys == "required":
            raise Refused(400, f"{label} needs an Idempotency-Key: this service runs with keys required",
                          self.profile.code("no-key"))
        if key is None and self.profile.key_required:
            raise Refused(400, f"{label} needs an idempotency key ({self.profile.header}): under the "
                               f"{self.profile.slug} contract every changing request carries one",
                          self.profile.code("no-key"), contract=True)
        checked = None if key is None else self.valid_key(key)
        what = repr(title) if kind == "issue" else f"on #{issue}"
        if self.late and await self.report("point", "sent", {"call": what, "key": checked}) == HOLD:
            self.held.append(Held(label, kind, issue, title, body, checked, request, what))
            return Answer(504, {"error": "the request is on the wire: it arrives later, or never"})
        if checked is not None and self.tracker == "fencing" and self.store.fenced(checked):
            raise Refused(409, f"key {checked!r} was fenced by a lookup that found nothing: "
                               "a request under it is refused, so it can never land late")
        sent = self.store.bump("sent") if self.no_reply or self.failed_after else 0
        if self.no_reply and sent == self.no_reply[0]:
            return await self._no_reply(label, kind, issue, title, body, checked, request, what)
        failing = self.fail_next or sent == self.failed_after > 0
        honoured = checked if self.tracker == "keyed" else None  # the key that makes a retry a replay
        if honoured is not None:
            if honoured in self.in_flight:
                raise Refused(self.profile.in_flight_status, f"a request under key {honoured!r} is still being "
                              "processed: retry once it is answered", self.profile.code("in-flight"),
                              (("Retry-After", "1"),) if self.profile.retry_after else (), contract=True)
            self.in_flight.add(honoured)
        try:
            answer = await self._apply(kind, issue, title, body, checked, request, failing)
            if self.pause is not None and not self.pause.caught.is_set():
                await self.pause.hold(checked)
            failed = failing and not answer.replayed  # it made its effect, and now fails
            detail = {"call": what, "key": checked, "applied": not answer.replayed,
                      "answer": answer.body.get("number"), "status": 500 if failed else answer.status}
            if failed:
                # Told with the point, not after it: a request whose client died there is told nothing more, so the
                # key leaves the flight as the harness's word arrives, before any restart can retry under it.
                detail["kept"] = self.after_failure
                self.fail_next = False
            await self.report("request", label, detail, point="accepted")
            if failed:
                answer = Answer(500, FAILED)
        finally:
            if honoured is not None:
                self.in_flight.discard(honoured)
        return answer

    @property
    def after_failure(self) -> str:
        """What the key of a request that failed after its effect keeps: the profile's word, for a keyed tracker; a
        lookup or fencing tracker keeps the effect, so its lookup reports what was made."""
        return self.profile.after_failure if self.tracker == "keyed" else "replay-effect"

    async def _no_reply(self, label: str, kind: Kind, issue: int | None, title: str | None, body: str,
                        key: str | None, request: str, what: str) -> Answer:
        """The request whose reply does not come in time: applied (its reply lost) or never arrived, and
        either way a 504, which the client cannot tell apart: the outcome is unknown to the loop."""
        applied = self.no_reply is not None and self.no_reply[1]
        number = None
        if applied:
            done = await self._apply(kind, issue, title, body, key, request)
            number = done.body.get("number")
            await self.report("request", label, {"call": what, "key": key, "applied": not done.replayed,
                                                 "answer": number, "status": done.status}, point="accepted")
        await self.report("no-reply", label, {"call": what, "key": key, "applied": applied, "answer": number})
        return Answer(504, {"error": "no reply in time: the request may or may not have been applied"})

    async def _apply(self, kind: Kind, issue: int | None, title: str | None, body: str, key: str | None,
                     request: str, failing: bool = False) -> Answer:
        """Replay the response kept under `key`, or commit the record (and keep the key) as `commit` orders; if
        `failing`, the key keeps what the profile keeps of a request that fails after its effect."""
        now = self.store.now()
        kept = None if key is None or self.tracker == "keyless" else self.live(key, now)
        if kept is not None and self.tracker == "keyed":
            if kept.fingerprint != request and self.profile.other_payload == "refused":
                raise Refused(self.profile.other_payload_status, f"key {key!r} was first used for another request: "
                              "a key names one request, send this one under a new key",
                              self.profile.code("other-payload"), contract=True)
            if kept.status == 404:
                raise Refused(404, kept.answer["error"])
            return self.replay(kept)
        keep = request if key is not None and self.tracker != "keyless" and kept is None else None
        after = self.after_failure if failing else "replay-effect"
        if after == "run-again":
            keep = None  # only a success is kept, and this request will not answer one
        failure = FAILED if after == "replay-failure" else None
        try:
            number = await self._commit(Change(kind, issue, title, body, key, keep, now, failure))
        except NoSuchIssue:
            # The refusal is the request's response, kept under its key as any is: the same request resent, or
            # left in flight by a dead client and landing late, is refused again, though the issue be made since.
            refusal = Refused(404, f"there is no issue #{issue} to comment on")
            if key is not None and keep is not None:
                with self.store.transaction() as sql:
                    self.store.keep(sql, key, Kept(keep, 404, {"error": refusal.message}, now))
            raise refusal from None
        return Answer(201, {"number": number})

    async def _commit(self, change: Change) -> int:
        """Make `change` durable as `commit` orders, passing the service's crash points between its steps."""
        await self.point("applied")  # in the service's memory only: nothing of it is durable yet
        if self.commit == "ack-first":
            number = next_number(self.store, change)
            self.behind.append(change)
            return number
        if self.commit == "two-step":
            number = record_only(self.store, change)
            await self.point("record-committed")  # the record is durable, its key not yet
            key_only(self.store, change, number)
            return number
        return one_txn(self.store, change)

    async def point(self, label: str) -> None:
        if self.steps:
            await self.report("point", label, {})

    def catch_up(self) -> None:
        """An ack-first service writes what it answered before: as the next request arrives, or when asked."""
        while self.behind:
            one_txn(self.store, self.behind.pop(0))

    def live(self, key: str, now: float) -> Kept | None:
        """The response kept under `key`, unless it is older than the retention: then the key is forgotten."""
        kept = self.store.kept(key)
        return kept if kept is not None and self.fresh(kept.made, now) else None

    def fresh(self, made: float, now: float) -> bool:
        """Whether what was kept under a key at `made` still counts at `now`, by the retention."""
        return self.kept_for is None or now - made < self.kept_for * 3600.0

    # Read-only requests: a search, and the lookup rung.

    async def search(self, query: object) -> Answer:
        self.catch_up()
        if query is None:
            raise Refused(400, "a search needs a query: GET /search?q=TEXT")
        needle = text(query, "q").casefold()
        found = [r for r in self.store.issues() if needle in (r.title or "").casefold() or needle in r.body.casefold()]
        await self.report("request", "search", {"call": repr(query), "query": query, "key": None, "applied": False,
                                                 "answer": [r.number for r in found]})
        return Answer(200, {"issues": [{"number": r.number, "title": r.title, "body": r.body} for r in found]})

    async def lookup(self, key: object) -> Answer:
        self.catch_up()
        checked = self.valid_key(key)
        if self.tracker == "keyless":
            raise Refused(501, "a keyless service keeps no keys, so it has none to look up")
        kept = self.live(checked, self.store.now())
        number = None if kept is None else kept.answer.get("number")
        fenced = number is None and self.tracker == "fencing"  # nothing made: a kept refusal stops no late arrival
        if fenced:
            self.store.fence(checked)
        await self.report("lookup", "key", {"key": checked, "answer": number, "fenced": fenced})
        if kept is None:
            fence = ": it is fenced now, and a request under it will be refused" if fenced else ""
            return Answer(404, {"error": f"no response is kept under key {checked!r}{fence}", "fenced": fenced})
        return Answer(200, {"status": kept.status, "body": kept.answer, **({"fenced": True} if fenced else {})})

    # The person, who answers from the records, and the model's counter.

    async def ask(self, payload: dict[str, Any]) -> Answer:
        """Did it happen? An issue with this title, or this comment on this issue: the truth, and one more ask."""
        self.catch_up()
        if "title" not in payload and "issue" not in payload:
            raise Refused(400, "a question names an issue's title, or an issue and a comment's body")
        if "title" in payload:
            fields(payload, ("title",))
            title = text(payload["title"], "title")
            question: dict[str, Any] = {"title": title, "question": f"was the issue {title!r} filed?"}
            made = [r.number for r in self.store.issues() if r.title == title]
            kind = "issue"
        else:
            fields(payload, ("issue", "body"))
            issue, body = positive(payload["issue"], "issue"), text(payload["body"], "body")
            question = {"issue": issue, "body": body, "question": f"did the comment {body!r} land on #{issue}?"}
            made = [r.number for r in self.store.comments_on(issue) if r.body == body]
            kind = "comment"
        asks = self.store.bump("asks")
        truth = made[0] if made else None
        said = made
        if asks == self.wrong_at:  # the one question answered wrong: "no" when it happened, else "yes, the newest"
            newest = max((r.number for r in self.store.records() if r.kind == kind), default=1)
            said = [] if made else [newest]
        answer = said[0] if said else None
        await self.report("ask", "person", {**question, "happened": bool(said), "numbers": said, "asks": asks,
                                            "answer": answer, "truth": truth})
        return Answer(200, {"happened": bool(said), "numbers": said})

    async def approve(self, payload: dict[str, Any]) -> Answer:
        fields(payload, ("action",))
        action = text(payload["action"], "action")
        approvals = self.store.bump("approvals")
        await self.report("approval", "person", {"call": action, "action": action, "approved": True,
                                                 "decided_now": True, "approvals": approvals})
        return Answer(200, {"approved": True})

    async def model_call(self) -> Answer:
        """A loop reports each model call it pays for; a restart that calls again is counted again."""
        calls = self.store.bump("model_calls")
        await self.report("model", "call", {"calls": calls, "call_count": calls, "reply": "(the loop's own)"})
        return Answer(200, {"calls": calls})

    # The harness's controls: no frames, no keys.

    async def land(self) -> dict[str, Any]:
        """The oldest request left on the wire arrives now: applied as any request is, but nobody hears the
        answer. A fencing service refuses it if a lookup fenced its key; a keyed one replays a kept response."""
        if not self.held:
            raise Refused(409, "no request is on the wire: none was held at sent")
        held = self.held.pop(0)
        self.catch_up()
        said = {"call": held.what, "key": held.key, "applied": False, "answer": None, "fenced": False,
                "label": held.label}
        if held.key is not None and self.tracker == "fencing" and self.store.fenced(held.key):
            return {**said, "fenced": True}
        try:
            done = await self._apply(held.kind, held.issue, held.title, held.body, held.key, held.request)
        except Refused as refusal:
            return {**said, "refused": refusal.status}
        return {**said, "applied": not done.replayed, "answer": done.body.get("number")}

    def reset(self) -> None:
        self.resume()
        self.fail_next = False
        self.held.clear()
        self.behind.clear()
        self.store.reset()
        self.in_flight.clear()

    def arm_pause(self) -> None:
        """Keep the next changing request in flight after its commit, until `resume`."""
        self.resume()
        self.pause = Pause()

    async def paused(self, seconds: float) -> dict[str, Any]:
        """Wait up to `seconds` for the armed pause to catch a request: whether it did, and the key it came under (it
        did not if it was resumed first). `Refused` (409) if none is armed, (408) if none came."""
        pause = self.pause
        if pause is None:
            raise Refused(409, "no pause is armed: POST /_crashlab/pause first")
        try:
            await asyncio.wait_for(pause.caught.wait(), seconds)
        except TimeoutError:
            raise Refused(408, f"no changing request arrived within {seconds:g} s to be paused") from None
        return {"paused": pause.holding, "key": pause.key}

    def resume(self) -> None:
        """The paused request goes on and answers; a pause armed and not yet used is disarmed, and whoever waits for
        it to catch a request hears that none came."""
        if self.pause is not None:
            self.pause.go.set()
            self.pause.caught.set()
        self.pause = None

    def state(self) -> dict[str, Any]:
        self.catch_up()  # the scenario is over and the service alive: what it answered, it writes
        counts = {name: self.store.count(name) for name in COUNTS}
        return {"tracker": self.tracker, "records": [r.as_json() for r in self.store.records()], **counts}

    def advance(self, payload: dict[str, Any]) -> float:
        fields(payload, ("advance_hours",))
        hours = payload["advance_hours"]
        if isinstance(hours, bool) or not isinstance(hours, int | float) or not 0 <= hours <= 1e6:
            raise Refused(400, f"advance_hours must be a number of hours from 0 to 1e6, not {shown(hours)}")
        return self.store.advance(float(hours))
