"""The scripted job: what the model replies, turn by turn, and what each tool call asks of the world.

A job is loaded from YAML once and then never changes: every process of every scenario replays the
same script, so the same job gives the same crash points and counts on every run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: Each tool and the arguments it takes. The first two change the tracker; search only reads.
TOOLS: dict[str, tuple[str, ...]] = {
    "create_issue": ("title", "body"),
    "comment": ("issue", "body"),
    "search": ("query",),
}
CHANGING_TOOLS = frozenset({"create_issue", "comment"})

#: Optional per-call fields, for the two harder situations of the agent's own loop.
CALL_FLAGS = ("fails_after_accept", "needs_approval")


class JobError(ValueError):
    """A job that cannot be run; the message names the file, the place and the problem."""


@dataclass(frozen=True)
class Call:
    """One tool call of a model reply. Its ID is fixed by the script, so a repeated reply repeats it."""

    id: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    fails_after_accept: bool = False
    needs_approval: bool = False

    @property
    def changes(self) -> bool:
        return self.tool in CHANGING_TOOLS

    @property
    def ref(self) -> str | None:
        """The ID of the earlier call whose issue this comment targets (``"$A"`` gives ``"A"``)."""
        issue = self.args.get("issue")
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
    name: str
    run: str
    turns: tuple[Turn, ...]
    source: str = "<job>"

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(call for turn in self.turns for call in turn.calls)

    @property
    def changing_calls(self) -> tuple[Call, ...]:
        """The calls whose effects the tracker must hold exactly once when the run is over."""
        return tuple(call for call in self.calls if call.changes)


def load_job(path: str | Path) -> Job:
    """Read and validate a job file; every problem becomes a `JobError` naming the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JobError(f"{source}: no such job file") from None
    except OSError as error:
        raise JobError(f"{source}: cannot read: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise JobError(f"{source}:{where}: invalid YAML: {problem}") from None
    return parse_job(data, source)


def parse_job(data: Any, source: str = "<job>") -> Job:
    """Build a `Job` from already-parsed YAML, checking the whole contract."""

    def fail(place: str, problem: str) -> JobError:
        return JobError(f"{source}: {place}: {problem}" if place else f"{source}: {problem}")

    if not isinstance(data, dict):
        raise fail("", "a job is a mapping with 'name' and 'turns'")
    unknown = set(data) - {"name", "run", "turns"}
    if unknown:
        raise fail("", f"unknown field {sorted(unknown)[0]!r} (valid: name, run, turns)")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise fail("name", "required, a non-empty string")
    run = data.get("run", f"{name}-run-1")
    if not isinstance(run, str) or not run:
        raise fail("run", "must be a non-empty string")
    raw_turns = data.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        raise fail("turns", "required, a non-empty list of turns")

    turns: list[Turn] = []
    created: set[str] = set()
    seen: set[str] = set()
    for t, raw in enumerate(raw_turns, start=1):
        place = f"turn {t}"
        if not isinstance(raw, dict) or len(raw) != 1 or not ({"calls", "answer"} & set(raw)):
            raise fail(place, "a turn is either {calls: [...]} or {answer: \"...\"}")
        if "answer" in raw:
            if not isinstance(raw["answer"], str):
                raise fail(place, "answer must be a string")
            if t != len(raw_turns):
                raise fail(place, "the answer must be the last turn, and there is exactly one")
            turns.append(Turn(answer=raw["answer"]))
            continue
        if not isinstance(raw["calls"], list) or not raw["calls"]:
            raise fail(place, "calls must be a non-empty list")
        calls = []
        for c, raw_call in enumerate(raw["calls"], start=1):
            call = _parse_call(raw_call, lambda problem: fail(f"{place} call {c}", problem), created)
            if call.id in seen:
                raise fail(f"{place} call {c}", f"duplicate call ID {call.id!r}")
            seen.add(call.id)
            if call.tool == "create_issue":
                created.add(call.id)
            calls.append(call)
        turns.append(Turn(calls=tuple(calls)))
    if not turns[-1].is_final:
        raise fail("turns", "missing the final answer: the last turn must be {answer: \"...\"}")
    return Job(name=name, run=run, turns=tuple(turns), source=source)


def _parse_call(raw: Any, fail, created: set[str]) -> Call:
    if not isinstance(raw, dict):
        raise fail("a call is a mapping with id, tool and args")
    unknown = set(raw) - {"id", "tool", "args", *CALL_FLAGS}
    if unknown:
        raise fail(f"unknown field {sorted(unknown)[0]!r} (valid: id, tool, args, {', '.join(CALL_FLAGS)})")
    call_id, tool, args = raw.get("id"), raw.get("tool"), raw.get("args", {})
    if not isinstance(call_id, str) or not call_id:
        raise fail("id is required, a non-empty string")
    if tool not in TOOLS:
        raise fail(f"unknown tool {tool!r} (valid: {', '.join(TOOLS)})")
    if not isinstance(args, dict):
        raise fail("args must be a mapping")
    wanted = TOOLS[tool]
    if set(args) != set(wanted):
        raise fail(f"{tool} takes exactly the args {', '.join(wanted)} (got {', '.join(map(str, args)) or 'none'})")
    for flag in CALL_FLAGS:
        if not isinstance(raw.get(flag, False), bool):
            raise fail(f"{flag} must be true or false")
    if tool == "comment":
        issue = args["issue"]
        if isinstance(issue, str):
            if not issue.startswith("$") or issue[1:] not in created:
                raise fail(f"issue {issue!r} must be an integer or \"$ID\" of an earlier create_issue call")
        elif not isinstance(issue, int) or isinstance(issue, bool):
            raise fail("issue must be an integer or \"$ID\" of an earlier create_issue call")
    return Call(id=call_id, tool=tool, args=dict(args), **{flag: raw.get(flag, False) for flag in CALL_FLAGS})
