"""What a job is: the model's replies, turn by turn, and what each tool call asks of the world.

A job is loaded once and then never changes: every process of every scenario replays the same
script, so the same job gives the same crash points and counts on every run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import astuple, dataclass, field
from typing import Any

#: Each tool and the arguments it takes. The first two change the tracker; search only reads.
TOOLS: dict[str, tuple[str, ...]] = {
    "create_issue": ("title", "body"),
    "comment": ("issue", "body"),
    "search": ("query",),
}
CHANGING_TOOLS = frozenset({"create_issue", "comment"})

#: Optional per-call fields, for the two harder situations of the agent's own loop.
CALL_FLAGS = ("fails_after_accept", "needs_approval")


@dataclass(frozen=True)
class Call:
    """One tool call of a model reply. Its ID is fixed by the script, so a repeated reply repeats it.

    After validation `args` holds exactly the tool's arguments, each a string or an int, for one of
    crashlab's `TOOLS`; for a tool of a program's own (`own`), any JSON object.
    """

    id: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    fails_after_accept: bool = False
    needs_approval: bool = False

    @property
    def changes(self) -> bool:
        return self.tool in CHANGING_TOOLS

    @property
    def own(self) -> bool:
        """Whether its tool is a program's own, not one of crashlab's: only a program (``--command``) can run it."""
        return self.tool not in TOOLS

    @property
    def ref(self) -> str | None:
        """The ID of the earlier call whose issue this comment targets (``"$A"`` gives ``"A"``)."""
        issue = self.args.get("issue") if self.tool == "comment" else None
        return issue[1:] if isinstance(issue, str) else None


@dataclass(frozen=True)
class Turn:
    """One model reply: tool calls to run in order, or the final answer."""

    calls: tuple[Call, ...] = ()
    answer: str | None = None

    @property
    def is_final(self) -> bool:
        return self.answer is not None


@dataclass(frozen=True)
class Job:
    """A validated job. `sha256` is the hash of the bytes it was parsed from (empty if built in code)."""

    name: str
    run: str
    turns: tuple[Turn, ...]
    source: str = "<job>"
    description: str = ""
    sha256: str = ""

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(call for turn in self.turns for call in turn.calls)

    @property
    def fingerprint(self) -> str:
        """A digest of all the job does: its name, run name, every call and the answer, whatever file or
        layout it came in. Two jobs of one name that differ in any call have different fingerprints."""
        what = [self.name, self.run, [[[astuple(call) for call in turn.calls], turn.answer] for turn in self.turns]]
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()

    @property
    def own_tools(self) -> tuple[str, ...]:
        """The tools of a program's own it calls, each once, in order: crashlab's loops run none of them."""
        return tuple(dict.fromkeys(call.tool for call in self.calls if call.own))

    @property
    def changing_calls(self) -> tuple[Call, ...]:
        """The calls whose effects the tracker must hold exactly once when the run is over."""
        return tuple(call for call in self.calls if call.changes)


def intended(call_id: str) -> str:
    """The script's call that a model's call ID stands for: a model asked again may name A ``A#2`` (``#`` is in
    no job's IDs). What a verdict counts effects against."""
    return call_id.partition("#")[0]
