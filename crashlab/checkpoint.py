"""The checkpoint: what a loop has made durable about its run, and all a restart can know.

It is an immutable value. Every change makes a new checkpoint, so a store can keep the one it was
handed as the durable copy without fear that the running loop edits it afterwards, and the in-memory
store and the file store hold exactly the same thing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .job import Call

#: Bumped whenever the JSON layout changes; a newer file is refused, never half-read.
FORMAT = 1


class CheckpointError(ValueError):
    """A checkpoint file that cannot be trusted: corrupt, truncated, or from a newer crashlab."""


@dataclass(frozen=True)
class TurnRecord:
    """One turn on disk: the model's reply, and what became of each of its calls."""

    number: int
    calls: tuple[Call, ...]
    results: Mapping[str, Any] = field(default_factory=dict)
    #: Attempt markers: the call was about to go out. A marker with no result is an unknown outcome.
    markers: frozenset[str] = frozenset()
    #: Each marker's settlement on the resolution ladder, saved before the loop acts on it.
    decisions: Mapping[str, str] = field(default_factory=dict)
    #: The person's approval decisions for gated calls, so a restart never asks for one twice.
    approvals: Mapping[str, bool] = field(default_factory=dict)
    closed: bool = False

    def pending(self) -> list[Call]:
        return [call for call in self.calls if call.id not in self.results]

    def _with(self, **change: Any) -> TurnRecord:
        fields = {
            "number": self.number, "calls": self.calls, "results": self.results,
            "markers": self.markers, "decisions": self.decisions, "approvals": self.approvals,
            "closed": self.closed,
        }
        fields.update(change)
        return TurnRecord(**fields)


@dataclass(frozen=True)
class Checkpoint:
    run: str
    turns: tuple[TurnRecord, ...] = ()
    answer: str | None = None

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
        return Checkpoint(self.run, self.turns + (turn,), self.answer)

    def _last(self, **change: Any) -> Checkpoint:
        return Checkpoint(self.run, self.turns[:-1] + (self.turns[-1]._with(**change),), self.answer)

    def with_marker(self, call_id: str) -> Checkpoint:
        return self._last(markers=self.turns[-1].markers | {call_id})

    def with_result(self, call_id: str, result: Any) -> Checkpoint:
        return self._last(results={**self.turns[-1].results, call_id: result})

    def with_decision(self, call_id: str, decision: str) -> Checkpoint:
        return self._last(decisions={**self.turns[-1].decisions, call_id: decision})

    def with_approval(self, call_id: str, approved: bool) -> Checkpoint:
        return self._last(approvals={**self.turns[-1].approvals, call_id: approved})

    def with_turn_closed(self) -> Checkpoint:
        return self._last(closed=True)

    def with_answer(self, answer: str) -> Checkpoint:
        return Checkpoint(self.run, self.turns, answer)

    def summary(self) -> str:
        """A one-line picture for people: ``T1 closed A=1 B=2 · T2 open S=[1] C:marker``."""
        parts = []
        for turn in self.turns:
            calls = []
            for call in turn.calls:
                if call.id in turn.results:
                    calls.append(f"{call.id}={json.dumps(turn.results[call.id])}")
                elif call.id in turn.decisions:
                    calls.append(f"{call.id}:{turn.decisions[call.id]}")
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

    def to_json(self) -> str:
        return json.dumps({
            "format": FORMAT,
            "run": self.run,
            "answer": self.answer,
            "turns": [
                {
                    "number": t.number,
                    "calls": [_call_to_dict(c) for c in t.calls],
                    "results": dict(t.results),
                    "markers": sorted(t.markers),
                    "decisions": dict(t.decisions),
                    "approvals": dict(t.approvals),
                    "closed": t.closed,
                }
                for t in self.turns
            ],
        })

    @classmethod
    def from_json(cls, text: str, source: str = "checkpoint") -> Checkpoint:
        """Parse a saved checkpoint, refusing anything it cannot read whole."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise CheckpointError(f"{source}: corrupt or truncated checkpoint: {error}") from None
        if not isinstance(data, dict) or not isinstance(data.get("format"), int):
            raise CheckpointError(f"{source}: not a crashlab checkpoint (no format version)")
        if data["format"] > FORMAT:
            raise CheckpointError(
                f"{source}: checkpoint format {data['format']} is newer than this crashlab reads ({FORMAT})"
            )
        try:
            turns = tuple(
                TurnRecord(
                    number=t["number"],
                    calls=tuple(Call(**c) for c in t["calls"]),
                    results=t["results"],
                    markers=frozenset(t["markers"]),
                    decisions=t["decisions"],
                    approvals=t["approvals"],
                    closed=t["closed"],
                )
                for t in data["turns"]
            )
            return cls(run=data["run"], turns=turns, answer=data["answer"])
        except (KeyError, TypeError) as error:
            raise CheckpointError(f"{source}: checkpoint is missing or mangles a field: {error}") from None


def _call_to_dict(call: Call) -> dict[str, Any]:
    data: dict[str, Any] = {"id": call.id, "tool": call.tool, "args": call.args}
    if call.fails_after_accept:
        data["fails_after_accept"] = True
    if call.needs_approval:
        data["needs_approval"] = True
    return data
