"""The issue tracker: the service a loop's tools change, and whose records outlive every crash."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from crashlab.job import Call
from crashlab.protocols.points import Recorder
from crashlab.world.clock import Clock

#: What a tracker does with an idempotency key or client token sent with a changing request.
TrackerMode = Literal["keyed", "keyless", "lookup", "fencing"]
TRACKER_MODES: tuple[TrackerMode, ...] = get_args(TrackerMode)
#: How long a keyed tracker holds a key for answering its repeats, in hours (Stripe's 24).
KEY_RETENTION = 24.0


class Fenced(Exception):
    """A request under a key that a lookup fenced: the receiver refuses it (the Idempotency-Key draft's 409)."""


#: What a key keeps for a request the tracker refused: no record has number 0.
REFUSED = 0


class NoSuchIssue(Exception):
    """A comment on an issue the tracker does not hold: refused, as a real tracker answers 404, and nothing made.

    The refusal is the request's response, and a keyed tracker keeps it under the request's key as it
    keeps any (`REFUSED`): a repeat under the key is refused again, though the issue be made since.
    Were it judged afresh, a comment the restart's resend saw refused, left in flight by the dead
    process, would land after the job made the issue, and the call's saved refusal would be a lie.
    """

    def __init__(self, issue: Any):
        super().__init__(f"there is no issue #{issue} to comment on")
        self.issue = issue


def refused(points: Recorder, call: Call, key: str | None, issue: Any) -> NoSuchIssue:
    """The refusal of `call`'s comment on `issue`, noted as the process saw it."""
    points.note("refused", call.tool, call=call.id, key=key, status=f"404: there is no issue #{issue} to comment on")
    return NoSuchIssue(issue)


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


class Modes:
    """What a tracker's mode means, and what a search finds in its records: the same wherever the records live."""

    points: Recorder
    mode: TrackerMode

    @property
    def records(self) -> list[Record]:
        raise NotImplementedError

    @property
    def honours_keys(self) -> bool:
        return self.mode == "keyed"

    @property
    def answers_lookups(self) -> bool:
        return self.mode in ("keyed", "lookup", "fencing")

    @property
    def fences(self) -> bool:
        return self.mode == "fencing"

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

    A keyed tracker honours a key for `KEY_RETENTION` hours after it applied it, then forgets it,
    and a repeat is applied again. A lookup is not bound by it: a record keeps the key it was made
    with, as Stripe's objects keep their metadata, so the receiver can still be asked about it.

    A request is durable before its answer leaves (`make_durable` does nothing here): a tracker
    that commits otherwise overrides it, and says what a death would take in `unsaved`.
    """

    def __init__(self, points: Recorder, mode: TrackerMode = "keyed", clock: Clock | None = None):
        if mode not in TRACKER_MODES:
            raise ValueError(f"unknown tracker mode {mode!r} (valid: {', '.join(TRACKER_MODES)})")
        self.points = points
        self.mode = mode
        self.clock = clock or Clock()
        self._records: list[Record] = []
        self._issues = 0
        self._comments = 0
        self._by_key: dict[str, int] = {}
        self._key_times: dict[str, float] = {}
        self._fenced: set[str] = set()

    @property
    def records(self) -> list[Record]:
        return self._records

    def request(self, call: Call, args: dict[str, Any], key: str | None = None) -> int:
        """Apply a changing request (create or comment) and return the new record's number."""
        self.points.guard("a tracker request made")
        if key in self._fenced:
            raise Fenced(f"call {call.id}'s key {key} was fenced by a lookup: the tracker refuses it")
        self.before_applying()
        done = self.apply(call, args, key)
        if done is None:
            raise refused(self.points, call, key, args["issue"])
        self.points.note("request", call.tool, call=call.id, args=args, key=key, applied=done.made,
                         answer=done.number, forgot=done.forgot)
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

    def apply(self, call: Call, args: dict[str, Any], key: str | None) -> Applied | None:
        """Apply a request in the tracker's memory, or answer it from a kept key; None: a comment on no issue."""
        known = key is not None and self.honours_keys and key in self._by_key
        forgot = known and key is not None and self.clock.hours - self._key_times[key] >= KEY_RETENTION
        if known and not forgot and key is not None:
            number = self._by_key[key]
            return None if number == REFUSED else Applied(number, made=False, forgot=False, kept_key=False)
        kept = key is not None and self.mode != "keyless" and (key not in self._by_key or forgot)
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
        return Applied(record.number, made=True, forgot=forgot, kept_key=kept)

    def receive(self, call: Call, args: dict[str, Any], key: str | None) -> Applied | None:
        """A request that no caller waits on any more: applied as any request is, with no crash point
        within it; refused (None) under a fenced key, or as a comment on no issue."""
        done = None if key in self._fenced else self.apply(call, args, key)
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

    def made_by(self, call_id: str) -> list[Record]:
        """The records a call made: the truth the person sees and the verdict counts."""
        return [r for r in self.records if r.call == call_id]

    def keys(self) -> dict[str, int]:
        return dict(self._by_key)

    def key_times(self) -> dict[str, float]:
        return dict(self._key_times)

    def hold(self, records: tuple[Record, ...], keys: dict[str, int], key_times: dict[str, float],
             fenced: tuple[str, ...]) -> None:
        """Hold exactly these records and keys: the tracker a restart finds (the harness's, not the loop's)."""
        self._records = list(records)
        self._issues = sum(1 for r in records if r.kind == "issue")
        self._comments = len(records) - self._issues
        self._by_key, self._key_times, self._fenced = dict(keys), dict(key_times), set(fenced)


def holds_issue(issue: Any, issues: int) -> bool:
    """Whether a tracker that has made `issues` issues, numbered from 1, holds issue number `issue`."""
    return isinstance(issue, int) and not isinstance(issue, bool) and 1 <= issue <= issues
