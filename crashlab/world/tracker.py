"""The issue tracker: the service a loop's tools change, and whose records outlive every crash."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from crashlab.job import Call
from crashlab.profiles import Profile
from crashlab.profiles.ietf import PROFILE as IETF
from crashlab.protocols.points import Recorder
from crashlab.world.clock import Clock

#: What a tracker does with an idempotency key or client token sent with a changing request.
TrackerMode = Literal["keyed", "keyless", "lookup", "fencing"]
TRACKER_MODES: tuple[TrackerMode, ...] = get_args(TrackerMode)
#: How long a keyed tracker holds a key for answering its repeats, in hours (Stripe's 24): the default profile's,
#: and what crashlab's loops assume of every receiver (`crashlab.loops.tools.toolbox`).
KEY_RETENTION = 24.0


class Fenced(Exception):
    """A request under a key that a lookup fenced: the receiver refuses it (the Idempotency-Key draft's 409)."""


#: What a key keeps for a request the tracker refused: no record has number 0.
REFUSED = 0


#: What a refusal by the tracker's idempotency contract says, first: the verdict counts the effect it refused as
#: missing, as a loop that sent it so lost it (`crashlab.protocols.outcome`), unlike a comment on no issue.
CONTRACT_REFUSAL = "the receiver's idempotency contract refuses it"


class Refused(Exception):
    """A changing request the tracker answered with a 4xx: nothing made, and the refusal is the call's result.

    Its profile refuses a request without a key where one is required (400), a key longer than it
    takes (400), and a key it holds sent with another payload (the draft's 422), where it does.
    """

    def __init__(self, status: str, contract: bool = True):
        super().__init__(f"{CONTRACT_REFUSAL}, {status}" if contract else status)
        self.status = status


class NoSuchIssue(Refused):
    """A comment on an issue the tracker does not hold: refused, as a real tracker answers 404, and nothing made.

    The refusal is the request's response, and a keyed tracker keeps it under the request's key as it
    keeps any (`REFUSED`): a repeat under the key is refused again, though the issue be made since.
    Were it judged afresh, a comment the restart's resend saw refused, left in flight by the dead
    process, would land after the job made the issue, and the call's saved refusal would be a lie.
    """

    def __init__(self, issue: Any):
        super().__init__(f"there is no issue #{issue} to comment on", contract=False)
        self.issue = issue


def screened(profile: Profile, call: Call, key: str | None) -> str | None:
    """Why `profile` refuses `call`'s request before looking at its key's past (a 400's status), or None."""
    if not profile.honours_keys:
        return None  # a receiver that honours no key neither requires one nor reads it
    if key is None and profile.key_required:
        return f"400: {profile.provider} requires an idempotency key on every changing request"
    if key is not None and len(key) > profile.max_key:
        return f"400: {profile.provider} takes keys of at most {profile.max_key} characters, this one has {len(key)}"
    return None


def payload(tool: str, args: dict[str, Any]) -> tuple[str, str, Any]:
    """What a request under a key asks for, as its record holds it: the draft's fingerprint of its body."""
    if tool == "create_issue":
        return "issue", f"{args['title']}\n{args['body']}", None
    return "comment", args["body"], args["issue"]


def other_payload(profile: Profile, made: Record | None, tool: str, args: dict[str, Any]) -> str | None:
    """The refusal (a 422's status) of a request whose key `profile` holds for `made`, a record of another
    payload; None where the payload is the same, or the profile replays the first answer whatever it was."""
    if made is None or profile.other_payload == "replayed" or (made.kind, made.text, made.issue) == payload(tool, args):
        return None
    return f"{profile.other_payload_status}: the key was first used with another payload"


def refused(points: Recorder, call: Call, key: str | None, issue: Any) -> NoSuchIssue:
    """The refusal of `call`'s comment on `issue`, noted as the process saw it."""
    points.note("refused", call.tool, call=call.id, key=key, status=f"404: there is no issue #{issue} to comment on")
    return NoSuchIssue(issue)


def refusal(points: Recorder, call: Call, key: str | None, status: str) -> Refused:
    """The profile's refusal of `call`'s request, noted as the process saw it."""
    points.note("refused", call.tool, call=call.id, key=key, status=status, contract=True)
    return Refused(status)


@dataclass(frozen=True)
class Record:
    """One thing the tracker holds: an issue or a comment, tagged with the call that made it."""

    kind: str  # "issue" or "comment"
    number: int
    call: str
    key: str | None = None
    issue: int | None = None  # the issue a comment is on
    text: str = ""


@dataclass(frozen=True)
class Applied:
    """What the tracker did with one request: its answer, whether it made a record (rather than answering
    from a kept key), whether the key it repeats had been forgotten, and whether it kept the key."""

    number: int
    made: bool
    forgot: bool
    kept_key: bool


class TrackerProtocol(Protocol):
    """What a loop, the person and the verdict ask of a tracker; a loop cannot tell which one it has.

    Two implement it: `Tracker` here, in memory (the sweep's fast default), and
    `crashlab.world.sqlite.SqliteTracker`, in a database file that outlives a real process.
    """

    points: Recorder
    mode: TrackerMode
    profile: Profile

    @property
    def records(self) -> list[Record]: ...

    @property
    def honours_keys(self) -> bool: ...

    @property
    def answers_lookups(self) -> bool: ...

    @property
    def fences(self) -> bool: ...

    def request(self, call: Call, args: dict[str, Any], key: str | None = None) -> int: ...

    def search(self, call: Call, query: str) -> list[int]: ...

    def lookup(self, key: str) -> int | None: ...

    def made_by(self, call_id: str) -> list[Record]: ...

    def keys(self) -> dict[str, int]:
        """Every key the tracker remembers, with its first answer (none for a keyless tracker)."""

    def key_times(self) -> dict[str, float]:
        """When each key was last applied, in the world's hours: what its retention counts from."""

    def unsaved(self) -> tuple[int, frozenset[str]]:
        """What a death would take from the tracker: its newest records and the keys not yet durable."""

    def fenced(self) -> frozenset[str]:
        """The keys a lookup settled as never sent: a request that carries one is refused."""

    def failures(self) -> frozenset[str]:
        """The keys whose request was answered with a failure (`Tracker.failed`)."""


class Modes:
    """What a tracker's mode and profile mean, and what a search finds in its records: the same wherever the
    records live. The mode says what the tracker can do with a key; the profile (`crashlab.profiles`), which
    contract a keyed one keeps: under ``none`` it honours no key, though it still answers lookups."""

    points: Recorder
    mode: TrackerMode
    #: The contract it keeps: the default's, unless it was made under another (a service keeps its own).
    profile: Profile = IETF

    @property
    def records(self) -> list[Record]:
        raise NotImplementedError

    @property
    def honours_keys(self) -> bool:
        return self.mode == "keyed" and self.profile.honours_keys

    @property
    def answers_lookups(self) -> bool:
        return self.mode in ("keyed", "lookup", "fencing")

    @property
    def fences(self) -> bool:
        return self.mode == "fencing"

    def failures(self) -> frozenset[str]:
        """The keys whose request was answered with a failure, where the profile keeps that: none, here."""
        return frozenset()

    def search(self, call: Call, query: str) -> list[int]:
        """Read only: the issues whose text mentions `query`. Repeating it is always harmless.

        It matches in Python, not SQL, whose lower() is ASCII only."""
        self.points.guard("a search request made")
        needle = query.lower()
        found = [r.number for r in self.records if r.kind == "issue" and needle in r.text.lower()]
        self.points.note("request", call.tool, call=call.id, key=None, applied=False, answer=found)
        return found


class Tracker(Modes):
    """The issue tracker, in memory. Its records outlive every crash.

    `mode` says what it does with a key: ``keyed`` honours it (a known key returns the first answer
    and changes nothing), ``keyless`` ignores it and cannot be asked about it, ``lookup`` ignores it
    for the request but can answer whether a request with that key happened and what it returned.
    ``fencing`` answers lookups too, and a lookup that finds nothing fences the key: the receiver
    has settled it as never sent, and refuses a request that arrives with it later (`Fenced`).

    A keyed tracker honours a key for its profile's retention (the default's `KEY_RETENTION` hours)
    after it applied it, then forgets it, and a repeat is applied again. A lookup is not bound by it:
    a record keeps the key it was made with, as Stripe's objects keep their metadata, so the receiver
    can still be asked about it. A request whose answer was a failure (`failed`) leaves its key
    holding what the profile says: the failure, nothing (a retry runs again), or the success.

    A request is durable before its answer leaves (`make_durable` does nothing here): a tracker
    that commits otherwise overrides it, and says what a death would take in `unsaved`.
    """

    def __init__(self, points: Recorder, mode: TrackerMode = "keyed", clock: Clock | None = None,
                 profile: Profile | None = None):
        if mode not in TRACKER_MODES:
            raise ValueError(f"unknown tracker mode {mode!r} (valid: {', '.join(TRACKER_MODES)})")
        self.points = points
        self.mode = mode
        self.clock = clock or Clock()
        self.profile = profile or IETF
        self._records: list[Record] = []
        self._issues = 0
        self._comments = 0
        self._by_key: dict[str, int] = {}
        self._key_times: dict[str, float] = {}
        self._fenced: set[str] = set()
        self._failed: set[str] = set()  # keys whose request was answered with a failure

    @property
    def records(self) -> list[Record]:
        return self._records

    def request(self, call: Call, args: dict[str, Any], key: str | None = None) -> int:
        """Apply a changing request (create or comment) and return the new record's number."""
        self.points.guard("a tracker request made")
        if key in self._fenced:
            raise Fenced(f"call {call.id}'s key {key} was fenced by a lookup: the tracker refuses it")
        self.before_applying()
        if status := self.refuses(call, args, key):
            raise refusal(self.points, call, key, status)
        done = self.apply(call, args, key)
        if done is None:
            raise refused(self.points, call, key, args["issue"])
        kept = {} if not done.forgot or self.profile.retention == KEY_RETENTION else {"kept": self.profile.retention}
        self.points.note("request", call.tool, call=call.id, args=args, key=key, applied=done.made,
                         answer=done.number, forgot=done.forgot, **kept)
        if done.made:
            self.make_durable()
        self.points.hit("accepted")
        return done.number

    def before_applying(self) -> None:
        """What the tracker does as a request arrives, before it applies it: nothing, here."""

    def make_durable(self) -> None:
        """Make the request just applied durable, before its answer leaves: it already is, here."""

    def flush(self) -> None:
        """Make everything applied so far durable, with no crash point on the way: it already is, here."""

    def refuses(self, call: Call, args: dict[str, Any], key: str | None) -> str | None:
        """Why the profile refuses the request (a 4xx's status), or None: a missing or overlong key, or a key it
        holds for another payload."""
        if (status := screened(self.profile, call, key)) or key is None or not self.holds(key):
            return status
        return other_payload(self.profile, self.kept_for(key), call.tool, args)

    def holds(self, key: str) -> bool:
        """Whether a request under `key` is answered from what the key keeps, not applied: the profile honours
        the key, and has not forgotten it, nor (where only a success is kept) its request failed."""
        if not self.honours_keys or key not in self._by_key:
            return False
        if key in self._failed and self.profile.after_failure == "run-again":
            return False
        return self.profile.holds(self.clock.hours - self._key_times[key])

    def kept_for(self, key: str) -> Record | None:
        """The record whose answer `key` keeps, or None for a kept refusal."""
        number = self._by_key[key]
        return next((r for r in reversed(self.records) if r.key == key and r.number == number), None)

    def replays_failure(self, key: str | None) -> bool:
        """Whether a request under `key` is answered with the failure its first request got (Stripe v1's 500)."""
        return key is not None and key in self._failed and self.profile.after_failure == "replay-failure" \
            and self.holds(key)

    def failed(self, key: str | None) -> None:
        """The request just applied under `key` was answered with a failure (5xx): its key now keeps what the
        profile says: the failure (replay-failure), nothing that a retry honours (run-again), or the success
        (replay-effect, as before)."""
        if key is not None and self.honours_keys and self.profile.after_failure != "replay-effect":
            self._failed.add(key)

    def apply(self, call: Call, args: dict[str, Any], key: str | None) -> Applied | None:
        """Apply a request in the tracker's memory, or answer it from a kept key; None: a comment on no issue."""
        known = key is not None and self.honours_keys and key in self._by_key
        again = known and key in self._failed and self.profile.after_failure == "run-again"  # only a success is kept
        forgot = known and not again and key is not None and not self.holds(key)
        if known and not forgot and not again and key is not None:
            number = self._by_key[key]
            return None if number == REFUSED else Applied(number, made=False, forgot=False, kept_key=False)
        kept = key is not None and self.mode != "keyless" and (key not in self._by_key or forgot or again)
        if call.tool == "comment" and not holds_issue(args["issue"], self._issues):
            if kept and key is not None:
                self._by_key[key], self._key_times[key] = REFUSED, self.clock.hours
            return None
        if call.tool == "create_issue":
            self._issues += 1
            record = Record("issue", self._issues, call.id, key, text=f"{args['title']}\n{args['body']}")
        else:
            self._comments += 1
            record = Record("comment", self._comments, call.id, key, issue=args["issue"], text=args["body"])
        self.records.append(record)
        if kept and key is not None:
            self._by_key[key], self._key_times[key] = record.number, self.clock.hours
            self._failed.discard(key)
        return Applied(record.number, made=True, forgot=forgot, kept_key=kept)

    def receive(self, call: Call, args: dict[str, Any], key: str | None) -> Applied | None:
        """A request that no caller waits on any more: applied as any request is, with no crash point
        within it; refused (None) under a fenced key, as its profile refuses it, or as a comment on no issue."""
        done = None if key in self._fenced or self.refuses(call, args, key) else self.apply(call, args, key)
        self.flush()
        return done

    def unsaved(self) -> tuple[int, frozenset[str]]:
        return 0, frozenset()

    def lookup(self, key: str) -> int | None:
        """Did a request with this key happen? Its first answer, or None. Keyed and lookup trackers."""
        self.points.guard("a lookup request made")
        if not self.answers_lookups:
            raise RuntimeError("a keyless tracker cannot be asked about a key")
        answer = self._by_key.get(key) or None  # a refused request made nothing
        fenced = answer is None and self.fences  # a fencing tracker honours no key: a kept refusal stops nothing
        if fenced:
            self._fenced.add(key)  # settled as never sent: a late arrival with it is refused
        self.points.note("lookup", "key", key=key, answer=answer, fenced=fenced)
        return answer

    def fenced(self) -> frozenset[str]:
        return frozenset(self._fenced)

    def failures(self) -> frozenset[str]:
        return frozenset(self._failed)

    def made_by(self, call_id: str) -> list[Record]:
        """The records a call made: the truth the person sees and the verdict counts."""
        return [r for r in self.records if r.call == call_id]

    def keys(self) -> dict[str, int]:
        return dict(self._by_key)

    def key_times(self) -> dict[str, float]:
        return dict(self._key_times)

    def hold(self, records: tuple[Record, ...], keys: dict[str, int], key_times: dict[str, float],
             fenced: tuple[str, ...], failed: tuple[str, ...] = ()) -> None:
        """Hold exactly these records and keys: the tracker a restart finds (the harness's, not the loop's)."""
        self._records = list(records)
        self._issues = sum(1 for r in records if r.kind == "issue")
        self._comments = len(records) - self._issues
        self._by_key, self._key_times, self._fenced = dict(keys), dict(key_times), set(fenced)
        self._failed = set(failed)


def holds_issue(issue: Any, issues: int) -> bool:
    """Whether a tracker that has made `issues` issues, numbered from 1, holds issue number `issue`."""
    return isinstance(issue, int) and not isinstance(issue, bool) and 1 <= issue <= issues
