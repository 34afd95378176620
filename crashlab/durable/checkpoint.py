"""The checkpoint: what a loop has made durable about its run, and all a restart can know.

It is an immutable value, and its durable form is bytes: both stores keep exactly the JSON a file
would hold, so whatever a loop does to the object it holds after a save, the restart reads what was
saved, on either store. The reader is strict: a file that is not whole and well-typed is refused
with the field that is wrong, never half-read and never taken for an empty run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from crashlab.job import Call

#: Bumped whenever the JSON layout changes; a file of another format is refused, never half-read.
#: Format 2 gave each attempt marker the hour it was written (format 1 kept only the call IDs);
#: format 3 counts each call's keys that a fencing lookup retired.
FORMAT = 3
#: Why a file of an older format cannot be read as this one: what it does not say.
OLDER = {1: "whose markers carry no time", 2: "which keeps no count of fenced keys"}

#: The rungs of the resolution ladder a saved decision may name (see crashlab.loops.agent).
Rung = Literal["rerun", "lookup", "ask"]
#: What a tool call returns: an issue or comment number, a search's hits, or a refusal's reason.
Result = Annotated[int, msgspec.Meta(ge=1)] | list[int] | str


class CheckpointError(ValueError):
    """A checkpoint file that cannot be trusted: corrupt, truncated, mistyped, or from a newer crashlab."""


class TurnRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One turn on disk: the model's reply, and what became of each of its calls.

    Every field is required in a file: a missing one is a mangled file, not an empty default.
    """

    number: Annotated[int, msgspec.Meta(ge=1)]
    calls: tuple[Call, ...]
    results: dict[str, Result]
    #: Attempt markers: the call was about to go out, at this hour of the world's clock. A marker with
    #: no result is an unknown outcome; its age says whether the receiver can still hold the key.
    markers: dict[str, Annotated[float, msgspec.Meta(ge=0)]]
    #: Each marker's settlement on the resolution ladder, saved before the loop acts on it.
    decisions: dict[str, Rung]
    #: The person's approval decisions for gated calls, so a restart never asks for one twice.
    approvals: dict[str, bool]
    #: How many of each call's keys a fencing lookup settled as never sent: its next request goes
    #: out under key generation n + 1, saved before it leaves, so a restart looks up the right key.
    fenced: dict[str, Annotated[int, msgspec.Meta(ge=1)]]
    closed: bool

    @classmethod
    def reply(cls, number: int, calls: tuple[Call, ...]) -> TurnRecord:
        """A turn as the model's reply opens it: its calls, and nothing done yet."""
        return cls(number, calls, {}, {}, {}, {}, {}, False)

    def generation(self, call_id: str) -> int:
        """Which of its keys the call's next request carries: the first, unless lookups fenced some."""
        return self.fenced.get(call_id, 0) + 1

    def pending(self) -> list[Call]:
        return [call for call in self.calls if call.id not in self.results]


class Checkpoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    run: str
    turns: tuple[TurnRecord, ...]
    answer: str | None
    format: int = FORMAT  # checked before the rest is read

    @classmethod
    def new(cls, run: str) -> Checkpoint:
        """The checkpoint of a run that has done nothing yet."""
        return cls(run, (), None)

    @property
    def finished(self) -> bool:
        return self.answer is not None

    @property
    def open_turn(self) -> TurnRecord | None:
        """The last turn, if its reply is saved and it has not been closed."""
        if self.turns and not self.turns[-1].closed:
            return self.turns[-1]
        return None

    @property
    def next_turn(self) -> int:
        return len(self.turns) + 1

    def results(self) -> dict[str, Any]:
        """Every saved result, by call ID: how a later call finds the issue "$A" created."""
        return {cid: result for turn in self.turns for cid, result in turn.results.items()}

    # Every change below returns a new checkpoint; the last turn is the only one that changes.

    def with_turn(self, turn: TurnRecord) -> Checkpoint:
        return msgspec.structs.replace(self, turns=(*self.turns, turn))

    def _last(self, **change: Any) -> Checkpoint:
        last = msgspec.structs.replace(self.turns[-1], **change)
        return msgspec.structs.replace(self, turns=(*self.turns[:-1], last))

    def with_marker(self, call_id: str, hours: float) -> Checkpoint:
        """The marker of an attempt about to go out at `hours`; a call's first marker is the one kept."""
        markers = self.turns[-1].markers
        return self._last(markers=markers if call_id in markers else {**markers, call_id: hours})

    def with_result(self, call_id: str, result: Any) -> Checkpoint:
        return self._last(results={**self.turns[-1].results, call_id: result})

    def with_decision(self, call_id: str, decision: str) -> Checkpoint:
        return self._last(decisions={**self.turns[-1].decisions, call_id: decision})

    def with_approval(self, call_id: str, approved: bool) -> Checkpoint:
        return self._last(approvals={**self.turns[-1].approvals, call_id: approved})

    def with_fenced(self, call_id: str) -> Checkpoint:
        """The call's current key fenced: its next request goes under the next generation."""
        return self._last(fenced={**self.turns[-1].fenced, call_id: self.turns[-1].generation(call_id)})

    def with_turn_closed(self) -> Checkpoint:
        return self._last(closed=True)

    def with_answer(self, answer: str) -> Checkpoint:
        return msgspec.structs.replace(self, answer=answer)

    def summary(self) -> str:
        """A one-line picture for people: ``T1 closed A=1 B=2 · T2 open S=[1] C:marker``."""
        parts = []
        for turn in self.turns:
            calls = []
            for call in turn.calls:
                if call.id in turn.results:
                    calls.append(f"{call.id}={json.dumps(turn.results[call.id])}")
                elif call.id in turn.decisions:
                    fenced = f", key {turn.generation(call.id)}" if call.id in turn.fenced else ""
                    calls.append(f"{call.id}:{turn.decisions[call.id]}{fenced}")
                elif call.id in turn.markers:
                    calls.append(f"{call.id}:marker")
                elif call.id in turn.approvals:
                    calls.append(f"{call.id}:{'approved' if turn.approvals[call.id] else 'refused'}")
                else:
                    calls.append(f"{call.id}:-")
            parts.append(f"T{turn.number} {'closed' if turn.closed else 'open'} {' '.join(calls)}")
        if self.finished:
            parts.append("finished")
        return " · ".join(parts) or "empty"

    def to_json(self) -> bytes:
        """The durable form: the bytes a store keeps, in memory or on disk."""
        return _encoder.encode(self)

    @classmethod
    def from_json(cls, data: bytes | str, source: str = "checkpoint") -> Checkpoint:
        """Parse a saved checkpoint, refusing anything it cannot read whole."""
        try:
            checkpoint = msgspec.json.decode(data, type=cls)
        except msgspec.DecodeError as error:
            raise CheckpointError(f"{source}: {_why_unreadable(data, error)}") from None
        except RecursionError:
            raise CheckpointError(f"{source}: {TOO_DEEP}") from None
        if checkpoint.format != FORMAT:
            raise CheckpointError(f"{source}: {_why_unreadable(data, None)}")
        if problem := checkpoint._inconsistency():
            raise CheckpointError(f"{source}: inconsistent checkpoint: {problem}")
        return checkpoint

    def _inconsistency(self) -> str | None:
        """What no loop could have saved: turns out of order, entries for calls the turn does not have."""
        for position, turn in enumerate(self.turns, start=1):
            where = f"$.turns[{position - 1}]"
            if turn.number != position:
                return f"{where}.number is {turn.number}, expected {position}"
            if not turn.closed and position < len(self.turns):
                return f"{where} is open but is not the last turn"
            ids = {call.id for call in turn.calls}
            if len(ids) != len(turn.calls):
                return f"{where}.calls repeats a call ID"
            for name in ("results", "markers", "decisions", "approvals", "fenced"):
                if not ids.issuperset(getattr(turn, name)):
                    stray = sorted(set(getattr(turn, name)) - ids)[0]
                    return f"{where}.{name} names {stray!r}, which is not a call of the turn"
        if self.finished and self.open_turn is not None:
            return "the run is finished but its last turn is open"
        return None


#: A file nested deeper than the decoder follows (a call's arguments may hold any JSON): no loop saved it.
TOO_DEEP = "corrupt checkpoint: nested too deeply to read"


class _Version(msgspec.Struct):
    """Only the format number: what a file that is not this layout says it is."""

    format: int


def _why_unreadable(data: bytes | str, error: msgspec.DecodeError | None) -> str:
    """The first thing wrong with a file: not JSON, not ours, newer than this reader, or a mangled field."""
    try:
        version = msgspec.json.decode(data, type=_Version).format
    except msgspec.ValidationError as problem:  # JSON, but not ours
        return f"not a crashlab checkpoint (no format version): {problem}"
    except msgspec.DecodeError as problem:
        return f"corrupt or truncated checkpoint: {problem}"
    except RecursionError:
        return TOO_DEEP
    if version > FORMAT:
        return f"checkpoint format {version} is newer than this crashlab reads ({FORMAT})"
    if version in OLDER:
        return (f"checkpoint format {version} is an older crashlab's, {OLDER[version]} (this one reads {FORMAT}): "
                "finish that run with the crashlab that started it")
    if version < 1 or error is None:
        return f"checkpoint format {version} is not one this crashlab wrote"
    return f"checkpoint is missing or mangles a field: {error}"


def _encode_other(value: Any) -> Any:
    if isinstance(value, Mapping):  # a call's arguments, frozen by the job
        return dict(value)
    raise NotImplementedError(f"cannot save a {type(value).__name__} in a checkpoint")


_encoder = msgspec.json.Encoder(enc_hook=_encode_other)
