"""What the model's wires share: reading a hostile request's fields in one-line refusals, and writing SSE.

A request comes from any program, so every field is checked for its type before it is used, and a
field that is wrong is `Malformed`, naming its place as the request spells it
(``messages[2].tool_calls[0].function.name must be a string, not null``). Fields the model does not
play (temperature, tool_choice, metadata...) are left alone: the official clients send many.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from crashlab.service.script import Asked, Malformed, Result
from crashlab.service.tracker import json_type

#: Whatever a field may be; `need` and `may` check it against one JSON type.
JSON_TYPES: dict[type, str] = {str: "a string", list: "an array", dict: "an object", bool: "a boolean"}


def place(where: str, name: str | int) -> str:
    """A field's place as the request spells it: ``messages[2].content``."""
    if isinstance(name, int):
        return f"{where}[{name}]"
    return f"{where}.{name}" if where else name


def need(holder: dict[str, Any], name: str, kind: type, where: str = "") -> Any:
    """The field `name` of `holder`, which must be there and be of JSON type `kind`."""
    if name not in holder:
        raise Malformed(f"{place(where, name)} is missing: it is required, {JSON_TYPES[kind]}")
    if holder[name] is None:
        raise Malformed(f"{place(where, name)} must be {JSON_TYPES[kind]}, not null")
    return may(holder, name, kind, where)


def may(holder: dict[str, Any], name: str, kind: type, where: str = "") -> Any:
    """The field `name` of `holder`, None if it is absent or null, else of JSON type `kind`."""
    value = holder.get(name)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise Malformed(f"{place(where, name)} must be {JSON_TYPES[kind]}, not {json_type(value)}")
    return value


def objects(values: list[Any], where: str) -> Iterable[tuple[str, dict[str, Any]]]:
    """Each item of an array that must hold objects, with its place."""
    for i, value in enumerate(values):
        if not isinstance(value, dict):
            raise Malformed(f"{place(where, i)} must be an object, not {json_type(value)}")
        yield place(where, i), value


def text_of(content: Any, where: str, kinds: tuple[str, ...]) -> str:
    """A content's text: a string, or an array of parts, the text of those whose type is one of `kinds`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise Malformed(f"{where} must be a string or an array of parts, not {json_type(content)}")
    texts = []
    for at, part in objects(content, where):
        if may(part, "type", str, at) in kinds:
            texts.append(need(part, "text", str, at))
    return "".join(texts)


def arguments(text: str) -> Any:
    """A tool call's arguments as JSON, or the text itself if it is not JSON (which no job's call matches)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def tokens(text: str) -> int:
    """A token count to report, as a provider's usage does: a quarter of the characters, at least one."""
    return max(1, len(text) // 4)


def prompt(asked: Asked) -> int:
    """The prompt's tokens, as a usage reports them: a quarter of the characters of what the conversation says."""
    said = [entry.text if isinstance(entry, Result) else json.dumps([call.arguments for call in entry.calls])
            for entry in asked.conversation]
    return tokens("".join(said))


def sse(events: Iterable[tuple[str | None, dict[str, Any]]], done: bool = False) -> bytes:
    """Server-sent events, each ``event: NAME`` (if it has one) and its data as one line of JSON; with `done`,
    the ``data: [DONE]`` that ends a Chat Completions stream."""
    lines = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        lines.append(f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n")
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def events(data: bytes) -> list[tuple[str | None, Any]]:
    """Server-sent events as a client reads them: each event's name (if it has one) and its data as JSON; the
    ``[DONE]`` that ends a Chat Completions stream is left out. `Malformed` if a data line is not JSON."""
    found: list[tuple[str | None, Any]] = []
    name: str | None = None
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            said = line[5:].strip()
            if said != "[DONE]":
                try:
                    found.append((name, json.loads(said)))
                except ValueError:
                    raise Malformed(f"a streamed event's data is not JSON: {said[:60]!r}") from None
        elif not line.strip():
            name = None
    return found


def answer_of(data: bytes) -> Any:
    """A reply's body as JSON; `Malformed` if it is not."""
    try:
        return json.loads(data)
    except ValueError:
        raise Malformed(f"not JSON: {data[:60]!r}") from None
