"""The model over Anthropic's wire: Messages (``tool_use`` blocks in, ``tool_result`` blocks back).

Requests are read field by field (`crashlab.service.wire`); replies are built from the
``anthropic`` package's own types. The package is an extra (``pip install 'crashlab[model]'``):
this module is imported on the route's first request only.

A stream is the same message in the events the SDK's stream assembles: the message started with no
content, each block started, its JSON arguments or its text as one delta, stopped, then the stop
reason and the usage, and the message stopped.
"""

from __future__ import annotations

import json
from typing import Any

from anthropic.types import (
    ContentBlock,
    ErrorResponse,
    InputJSONDelta,
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    StopReason,
    TextBlock,
    TextDelta,
    ToolUseBlock,
    Usage,
)
from anthropic.types.raw_message_delta_event import Delta
from pydantic import ValidationError

from crashlab.service.script import Asked, Heard, Malformed, Reply, Result, Said, Tool, ToolCall
from crashlab.service.wire import answer_of, arguments, events, may, need, objects, place, prompt, sse, text_of, tokens

#: The blocks an assistant's message may hold besides its calls, passed over as the script reads it.
PASSED = ("text", "thinking", "redacted_thinking")


def error(message: str) -> dict[str, Any]:
    """Anthropic's error body, which its client raises as an `APIStatusError` saying `message`."""
    said = ErrorResponse(type="error", error={"type": "invalid_request_error", "message": message})  # type: ignore[arg-type]
    return said.to_dict(mode="json")


def messages_asked(body: dict[str, Any]) -> Asked:
    """A Messages request as the script reads it: each assistant message a reply, each tool_result a result."""
    model = need(body, "model", str)
    conversation: list[Said | Result] = []
    for where, message in objects(need(body, "messages", list), "messages"):
        role = need(message, "role", str, where)
        if role not in ("user", "assistant"):
            raise Malformed(f"{place(where, 'role')} {role[:40]!r} is not user or assistant")
        content = message.get("content")
        blocks = [] if isinstance(content, str) else list(objects(need(message, "content", list, where),
                                                                  place(where, "content")))
        if role == "assistant":
            calls = []
            for at, block in blocks:
                kind = need(block, "type", str, at)
                if kind == "tool_use":
                    calls.append(ToolCall(need(block, "id", str, at), need(block, "name", str, at),
                                          need(block, "input", dict, at)))
                elif kind not in PASSED:
                    raise Malformed(f"{place(at, 'type')} {kind[:40]!r} is a block this model does not read in an "
                                    f"assistant's message ({', '.join(('tool_use', *PASSED))})")
            conversation.append(Said(tuple(calls)))
            continue
        for at, block in blocks:
            if need(block, "type", str, at) == "tool_result":
                text = text_of(block.get("content"), place(at, "content"), ("text",))
                conversation.append(Result(need(block, "tool_use_id", str, at), text))
    tools = []
    for where, tool in objects(may(body, "tools", list) or [], "tools"):
        if may(tool, "type", str, where) in (None, "custom"):
            tools.append(Tool(need(tool, "name", str, where), may(tool, "input_schema", dict, where)))
    return Asked(tuple(conversation), tuple(tools), model, bool(may(body, "stream", bool)))


def messages_reply(reply: Reply, asked: Asked, ident: str) -> dict[str, Any] | bytes:
    """The reply as a `Message`, or, if the request streams, as its events."""
    blocks: list[TextBlock | ToolUseBlock] = [
        ToolUseBlock(type="tool_use", id=f"toolu_{call.id}", name=call.name, input=call.arguments)
        for call in reply.calls]
    if reply.answer is not None:
        blocks.append(TextBlock(type="text", text=reply.answer))
    stop: StopReason = "tool_use" if reply.calls else "end_turn"
    out = reply.answer or json.dumps([call.arguments for call in reply.calls])
    usage = Usage(input_tokens=prompt(asked), output_tokens=tokens(out))
    whole = Message(id=f"msg_{ident}", type="message", role="assistant", model=asked.model, content=[*blocks],
                    stop_reason=stop, stop_sequence=None, usage=usage)
    if not asked.stream:
        return whole.to_dict(mode="json")
    started = whole.model_copy(update={"content": [], "stop_reason": None,
                                       "usage": usage.model_copy(update={"output_tokens": 1})})
    events: list[Any] = [RawMessageStartEvent(type="message_start", message=started)]
    for index, block in enumerate(blocks):
        if isinstance(block, ToolUseBlock):
            opened: ContentBlock = block.model_copy(update={"input": {}})
            delta: InputJSONDelta | TextDelta = InputJSONDelta(type="input_json_delta",
                                                               partial_json=json.dumps(block.input, ensure_ascii=False))
        else:
            opened, delta = block.model_copy(update={"text": ""}), TextDelta(type="text_delta", text=block.text)
        events += [RawContentBlockStartEvent(type="content_block_start", index=index, content_block=opened),
                   RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=delta),
                   RawContentBlockStopEvent(type="content_block_stop", index=index)]
    events += [RawMessageDeltaEvent(type="message_delta", delta=Delta(stop_reason=stop, stop_sequence=None),
                                    usage=MessageDeltaUsage(output_tokens=usage.output_tokens)),
               RawMessageStopEvent(type="message_stop")]
    return sse((event.type, event.to_dict(mode="json")) for event in events)


def messages_heard(data: bytes, stream: bool) -> Heard:
    """The reply a model gave on Messages, a `Message` or its events, as a recording keeps it."""
    if not stream:
        try:
            message = Message.model_validate(answer_of(data))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(map(str, first["loc"])) or "the body"
            raise Malformed(f"not a Message: {where}: {first['msg']}") from None
        return Heard(tuple(ToolCall(block.id, block.name, block.input) for block in message.content
                           if isinstance(block, ToolUseBlock)),
                     "".join(block.text for block in message.content if isinstance(block, TextBlock)))
    blocks: dict[int, list[str]] = {}  # each block by its index: its kind, its ID, its name, its text or JSON
    said = events(data)
    if not any(isinstance(event, dict) and (event.get("type") or name) == "message_start" for name, event in said):
        raise Malformed("a Messages stream that never says message_start")
    for name, event in said:
        if not isinstance(event, dict):
            raise Malformed(f"a streamed event is not an object: {str(event)[:60]!r}")
        kind, index = event.get("type") or name, event.get("index")
        if kind == "error":
            raise Malformed(f"the stream says error: {str(event.get('error'))[:80]}")
        if not isinstance(index, int):
            continue  # the message's events, not a block's
        if kind == "content_block_start" and isinstance(block := event.get("content_block"), dict):
            blocks[index] = [str(block.get("type")), str(block.get("id", "")), str(block.get("name", "")),
                             str(block.get("text", ""))]
        elif kind == "content_block_delta" and index in blocks and isinstance(delta := event.get("delta"), dict):
            blocks[index][3] += str(delta.get("partial_json") or delta.get("text") or "")
    made = [blocks[index] for index in sorted(blocks)]
    return Heard(tuple(ToolCall(ident, tool, arguments(given or "{}")) for kind, ident, tool, given in made
                       if kind == "tool_use"),
                 "".join(text for kind, _, _, text in made if kind == "text"))
