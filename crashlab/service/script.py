"""The job's model, played from the conversation it is sent: which reply comes next, or why none can.

A program that calls a model over the wire keeps its conversation itself and sends it whole with
every request. So the reply is read off the conversation, never off a counter of requests: the k-th
reply is given to a conversation that holds the job's first k-1 replies and a result for each of
their tool calls, and a restart that asks again with what it saved gets the same reply. Each wire
(`crashlab.service.openai_wire`, `anthropic_wire`) reads its request into an `Asked`, and writes
the `Reply` this module decides in its own types.

A conversation that is not the script's (a reply with other calls, other arguments, a call with no
result, more replies than the job has, a tool the request does not declare) is `OffScript`, in one
line that shows the difference: a guess would sweep another job than the one the table names.

A comment's issue, ``$A`` in the job, is a number on the wire: the one A's result gave the
program, as a real model reads it from the conversation. A turn that comments on an issue made in
the same reply could not be played by any model, which learns the number only from a later
request, so such a job is refused when the script is made.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from crashlab.errors import BadInput
from crashlab.job import Call, Job, Turn, shown

#: How a service names its tool calls: the same ID each time a reply is given again, or new ones.
MODEL_IDS = ("stable", "drifting")


class OffScript(Exception):
    """A conversation the job's script does not hold: one line that says where it parts from the job."""


class Malformed(Exception):
    """A request that is not the wire format it was sent as: one line that says what and where."""


@dataclass(frozen=True)
class ToolCall:
    """A tool call of a reply, as the conversation holds it: its ID, its tool, its arguments as parsed JSON
    (or the text, if they were not JSON)."""

    id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class Said:
    """A reply the conversation holds: the assistant's tool calls, in order."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class Heard:
    """A reply a model gave, as a recording hears it on the wire: its tool calls, in order, and its text."""

    calls: tuple[ToolCall, ...]
    text: str


@dataclass(frozen=True)
class Result:
    """A tool's result the conversation holds: the call it answers, and its text."""

    call_id: str
    text: str


@dataclass(frozen=True)
class Tool:
    """A tool the request declares: its name and its parameters' JSON Schema, if it gave one."""

    name: str
    parameters: dict[str, Any] | None


@dataclass(frozen=True)
class Asked:
    """A request for the model's next reply, whatever wire it came by."""

    conversation: tuple[Said | Result, ...]
    tools: tuple[Tool, ...]
    model: str
    stream: bool


@dataclass(frozen=True)
class Planned:
    """A tool call of the reply to give: its ID on the wire (without a wire's prefix), the job's call it
    is, its tool and its arguments, a comment's issue as a number."""

    id: str
    call: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """The job's reply `turn`: tool calls, or the final answer."""

    turn: int
    calls: tuple[Planned, ...]
    answer: str | None

    @property
    def summary(self) -> str:
        """As crashlab's own scripted model notes a reply: its calls by the job's IDs, or its answer."""
        return f"answer {self.answer!r}" if self.answer is not None else " ".join(c.call for c in self.calls)


@dataclass(frozen=True)
class Followed:
    """Where a conversation that keeps to the script stands: the turn it asks for, and the arguments of that
    turn's calls on the wire (a comment's issue as the number an earlier result gave)."""

    turn: int
    arguments: tuple[dict[str, Any], ...]


def digest(*parts: object) -> str:
    """24 hex digits that name `parts`: an ID a restart gets again, and no program can read a meaning into."""
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def issue_number(text: str) -> int | None:
    """The issue a create_issue result names: ``{"number": n}`` as crashlab's service answers, else the one
    ``#n``, else the one number in the text; None if there is no one number."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and type(value.get("number")) is int:
        return int(value["number"])
    if type(value) is int:
        return int(value)
    for pattern in (r"#(\d{1,10})\b", r"\b(\d{1,10})\b"):
        found = {int(n) for n in re.findall(pattern, text)}
        if len(found) == 1:
            return found.pop()
    return None


def difference(given: Any, wanted: dict[str, Any]) -> str | None:
    """The first way `given` arguments differ from `wanted`, in a few words; None if they are the same."""
    if not isinstance(given, dict):
        return f"arguments that are not a JSON object ({shown(given)})"
    for name, value in wanted.items():
        if name not in given:
            return f"no {name} (the job's: {shown(value)})"
        if given[name] != value or isinstance(given[name], bool) != isinstance(value, bool):
            return f"{name} {shown(given[name])} where the job has {shown(value)}"
    extra = [name for name in given if name not in wanted]
    return f"an argument the job's call has not: {shown(extra[0])}" if extra else None


def named(call: Call) -> str:
    return f"{call.tool} {call.id}"


class Script:
    """The job's replies, played to conversations. `ids` is ``stable`` (a reply given again names its calls
    as before) or ``drifting`` (each time a turn is asked again, the same calls under new IDs)."""

    def __init__(self, job: Job, ids: str = "stable"):
        if ids not in MODEL_IDS:
            raise BadInput(f"unknown --model-ids {ids!r} (valid: {', '.join(MODEL_IDS)})")
        for t, turn in enumerate(job.turns, start=1):
            own = {call.id for call in turn.calls}
            for call in turn.calls:
                if call.ref in own:
                    raise BadInput(f"{job.source}: turn {t} call {call.id} comments on ${call.ref}, made in the same "
                                   "reply: a model over the wire names an issue by its number, which it reads only "
                                   f"from {call.ref}'s result, in a later turn; move {call.id} to a later turn")
        self.job = job
        self.ids = ids

    @property
    def drifting(self) -> bool:
        return self.ids == "drifting"

    def follow(self, asked: Asked) -> Followed:
        """Check the conversation against the script, reply by reply; the turn it asks for. `OffScript` if it
        is not the script's."""
        turns = self.job.turns
        answered = {entry.call_id: entry.text for entry in asked.conversation if isinstance(entry, Result)}
        replies = [entry for entry in asked.conversation if isinstance(entry, Said)]
        made = {call.id for said in replies for call in said.calls}
        stray = [call_id for call_id in answered if call_id not in made]
        if stray:
            raise OffScript(f"a tool result for call {shown(stray[0])}, which no reply of the conversation made")
        results: dict[str, str] = {}
        for k, said in enumerate(replies, start=1):
            turn = turns[k - 1]
            if turn.is_final and said.calls:
                raise OffScript(f"reply {k} calls {', '.join(shown(call.name) for call in said.calls[:4])} where the "
                                f"job's turn {k} is its final answer")
            if turn.is_final:
                raise OffScript(f"the conversation holds the job's {len(turns)} replies, the last its final answer: "
                                f"the job has no reply {len(turns) + 1}")
            self._same(k, turn, said, results)
            for call, given in zip(turn.calls, said.calls, strict=True):
                if given.id not in answered:
                    raise OffScript(f"reply {k}'s call {named(call)} (ID {shown(given.id)}) has no tool result in the "
                                    "conversation: send each call's result before asking for the next reply")
                results[call.id] = answered[given.id]
        turn = turns[len(replies)]
        self._declared(len(replies) + 1, turn, asked.tools)
        return Followed(len(replies) + 1, tuple(self.arguments(call, results) for call in turn.calls))

    def _same(self, k: int, turn: Turn, said: Said, results: dict[str, str]) -> None:
        """`OffScript` if reply `k` of the conversation is not the job's turn `k`."""
        if len(said.calls) != len(turn.calls):
            holds = ", ".join(call.name for call in said.calls[:4]) or "no tool calls"
            raise OffScript(f"reply {k} holds {len(said.calls)} tool call(s) ({holds}) where the job's turn {k} has "
                            f"{len(turn.calls)} ({', '.join(named(call) for call in turn.calls[:4])})")
        for call, given in zip(turn.calls, said.calls, strict=True):
            if given.name != call.tool:
                raise OffScript(f"reply {k} calls {shown(given.name)} where the job's turn {k} calls {named(call)}")
            wanted = self.arguments(call, results)
            if (differs := difference(given.arguments, wanted)) is not None:
                raise OffScript(f"reply {k}'s call {named(call)} has {differs}")

    def _declared(self, k: int, turn: Turn, tools: tuple[Tool, ...]) -> None:
        """`OffScript` if reply `k` would call a tool the request does not declare, or pass what it does not take."""
        declared = {tool.name: tool for tool in tools}
        for call in turn.calls:
            tool = declared.get(call.tool)
            if tool is None:
                names = ", ".join(shown(name) for name in list(declared)[:6]) or "none"
                raise OffScript(f"the job's turn {k} calls {named(call)}, a tool the request does not declare "
                                f"(it declares: {names})")
            properties = (tool.parameters or {}).get("properties")
            if isinstance(properties, dict) and (extra := [name for name in call.args if name not in properties]):
                raise OffScript(f"the job's turn {k} calls {named(call)} with {extra[0]}, which the request's "
                                f"{call.tool} does not take (its parameters: {', '.join(map(shown, properties))})")
            required = (tool.parameters or {}).get("required")
            if isinstance(required, list) and (missing := [name for name in required if name not in call.args]):
                raise OffScript(f"the request's {call.tool} requires {shown(missing[0])}, which the job's turn {k} "
                                f"call {call.id} does not pass")

    def arguments(self, call: Call, results: dict[str, str]) -> dict[str, Any]:
        """The call's arguments on the wire: a comment's ``$A`` as the number A's result gave."""
        if call.ref is None:
            return dict(call.args)
        number = issue_number(results[call.ref])
        if number is None:
            raise OffScript(f"call {call.id} comments on the issue {call.ref} made, but {call.ref}'s result "
                            f"({shown(results[call.ref])}) names no one issue number")
        return {**call.args, "issue": number}

    def reply(self, followed: Followed, generation: int = 1) -> Reply:
        """The reply to the conversation `followed`, its calls named for the `generation`-th time the turn is
        given (always the first, unless the IDs drift)."""
        turn = self.job.turns[followed.turn - 1]
        if turn.is_final:
            return Reply(followed.turn, (), turn.answer)
        calls = tuple(Planned(self.call_id(followed.turn, call, generation), call.id, call.tool, arguments)
                      for call, arguments in zip(turn.calls, followed.arguments, strict=True))
        return Reply(followed.turn, calls, None)

    def call_id(self, turn: int, call: Call, generation: int) -> str:
        """A tool call's ID: the same for a (run, turn, call) each time, a new one for each later generation."""
        return digest(self.job.run, turn, call.id, *((generation,) if generation > 1 else ()))
