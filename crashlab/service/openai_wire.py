"""The model over OpenAI's two wires: Chat Completions (``tool_calls``) and Responses (``function_call`` items).

Requests are read field by field (`crashlab.service.wire`); replies are built from the ``openai``
package's own types and dumped as its client reads them, so a reply is what the SDK's models
hold, not a shape written here by hand. The package is an extra (``pip install 'crashlab[model]'``):
this module is imported on a route's first request, never by ``crashlab --help`` or a service that
is not asked for a model.

A stream is the same reply cut into the events a streaming client assembles: Chat Completions'
chunks (a role, each call's ID and name, its arguments, the finish reason, the usage if asked, then
``[DONE]``), and Responses' typed events (created, each item added, its arguments or text, done,
completed).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall, ChoiceDeltaToolCallFunction
from openai.types.chat.chat_completion_message_function_tool_call import ChatCompletionMessageFunctionToolCall, Function
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from openai.types.shared import ErrorObject
from pydantic import BaseModel, ValidationError

from crashlab.service.script import Asked, Heard, Malformed, Reply, Result, Said, Tool, ToolCall
from crashlab.service.tracker import json_type
from crashlab.service.wire import answer_of, arguments, events, may, need, objects, place, prompt, sse, text_of, tokens

#: Why a reply ends: it calls tools, or it is the final answer.
Finish = Literal["tool_calls", "stop"]
#: The roles a Chat Completions conversation holds; only the assistant's and the tools' are read.
ROLES = ("system", "developer", "user", "assistant", "tool")


def error(message: str, code: str) -> dict[str, Any]:
    """OpenAI's error body, which its client raises as an `APIStatusError` saying `message`."""
    return {"error": ErrorObject(message=message, type="invalid_request_error", param=None, code=code).to_dict()}


def dumped(model: Any) -> dict[str, Any]:
    """A type of the SDK's as JSON, the fields it was given: what its client parses back into the same type."""
    return model.to_dict(mode="json")


def encoded(planned_arguments: dict[str, Any]) -> str:
    return json.dumps(planned_arguments, ensure_ascii=False)


def validated(kind: type[BaseModel], value: Any, what: str) -> Any:
    """`value` read as the SDK's type `kind`, as its client reads it; `Malformed`, saying where, if it is not one."""
    try:
        return kind.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the body"
        raise Malformed(f"not {what}: {where}: {first['msg']}") from None


# Chat Completions.


def chat_asked(body: dict[str, Any]) -> Asked:
    """A Chat Completions request as the script reads it: the assistant's replies, the tools' results."""
    model = need(body, "model", str)
    conversation: list[Said | Result] = []
    for where, message in objects(need(body, "messages", list), "messages"):
        role = need(message, "role", str, where)
        if role not in ROLES:
            raise Malformed(f"{place(where, 'role')} {role[:40]!r} is not one of {', '.join(ROLES)}")
        if role == "assistant":
            calls = []
            for at, call in objects(may(message, "tool_calls", list, where) or [], place(where, "tool_calls")):
                function = need(call, "function", dict, at)
                calls.append(ToolCall(need(call, "id", str, at), need(function, "name", str, place(at, "function")),
                                      arguments(need(function, "arguments", str, place(at, "function")))))
            conversation.append(Said(tuple(calls)))
        elif role == "tool":
            text = text_of(message.get("content"), place(where, "content"), ("text",))
            conversation.append(Result(need(message, "tool_call_id", str, where), text))
    tools = []
    for where, tool in objects(may(body, "tools", list) or [], "tools"):
        if may(tool, "type", str, where) in (None, "function"):
            function = need(tool, "function", dict, where)
            tools.append(Tool(need(function, "name", str, place(where, "function")),
                              may(function, "parameters", dict, place(where, "function"))))
    return Asked(tuple(conversation), tuple(tools), model, bool(may(body, "stream", bool)))


def chat_reply(reply: Reply, asked: Asked, body: dict[str, Any], ident: str, created: int) -> dict[str, Any] | bytes:
    """The reply as a `ChatCompletion`, or, if the request streams, as its chunks."""
    calls = [
        ChatCompletionMessageFunctionToolCall(id=f"call_{call.id}", type="function",
                                              function=Function(name=call.name, arguments=encoded(call.arguments)))
        for call in reply.calls]
    finish: Finish = "tool_calls" if calls else "stop"
    out = reply.answer or "".join(call.function.arguments for call in calls)
    usage = CompletionUsage(prompt_tokens=prompt(asked), completion_tokens=tokens(out),
                            total_tokens=prompt(asked) + tokens(out))
    if not asked.stream:
        message = ChatCompletionMessage(role="assistant", content=reply.answer, refusal=None,
                                        tool_calls=[*calls] or None)
        return dumped(ChatCompletion(id=ident, object="chat.completion", created=created, model=asked.model,
                                     choices=[Choice(index=0, finish_reason=finish, message=message, logprobs=None)],
                                     usage=usage))

    def chunk(delta: ChoiceDelta | None, finish_reason: Finish | None = None,
              **more: Any) -> tuple[None, dict[str, Any]]:
        choices = [] if delta is None else [ChunkChoice(index=0, delta=delta, finish_reason=finish_reason)]
        return None, dumped(ChatCompletionChunk(id=ident, object="chat.completion.chunk", created=created,
                                                model=asked.model, choices=choices, **more))

    events = [chunk(ChoiceDelta(role="assistant", content="" if reply.answer is not None else None))]
    if reply.answer:
        events.append(chunk(ChoiceDelta(content=reply.answer)))
    for index, call in enumerate(calls):
        named = ChoiceDeltaToolCall(index=index, id=call.id, type="function",
                                    function=ChoiceDeltaToolCallFunction(name=call.function.name, arguments=""))
        said = ChoiceDeltaToolCall(index=index, function=ChoiceDeltaToolCallFunction(arguments=call.function.arguments))
        events += [chunk(ChoiceDelta(tool_calls=[named])), chunk(ChoiceDelta(tool_calls=[said]))]
    events.append(chunk(ChoiceDelta(), finish))
    options = may(body, "stream_options", dict) or {}
    if may(options, "include_usage", bool, "stream_options"):
        events.append(chunk(None, usage=usage))
    return sse(events, done=True)


def chat_heard(data: bytes, stream: bool) -> Heard:
    """The reply a model gave on Chat Completions, a `ChatCompletion` or its chunks, as a recording keeps it."""
    if not stream:
        completion = validated(ChatCompletion, answer_of(data), "a Chat Completion")
        if not completion.choices:
            raise Malformed("not a Chat Completion: it has no choices")
        message = completion.choices[0].message
        return Heard(tuple(ToolCall(call.id, call.function.name, arguments(call.function.arguments))
                           for call in message.tool_calls or () if call.type == "function"), message.content or "")
    text: list[str] = []
    calls: dict[int, list[str]] = {}  # each call by its index: its ID, its name, its arguments' pieces
    said = events(data)
    if not said:
        raise Malformed("a Chat Completions stream with no chunk")
    for _, event in said:
        chunk = validated(ChatCompletionChunk, event, "a Chat Completion chunk")
        for choice in chunk.choices[:1]:
            text.append(choice.delta.content or "")
            for piece in choice.delta.tool_calls or ():
                call = calls.setdefault(piece.index, ["", "", ""])
                call[0] = piece.id or call[0]
                if piece.function is not None:
                    call[1] += piece.function.name or ""
                    call[2] += piece.function.arguments or ""
    return Heard(tuple(ToolCall(ident, name, arguments(said)) for ident, name, said in
                       (calls[index] for index in sorted(calls))), "".join(text))


# Responses.

#: The items a Responses input may hold that the model reads or passes over; any other is refused.
ASSISTANT_ITEMS = ("function_call", "reasoning")


def responses_asked(body: dict[str, Any]) -> Asked:
    """A Responses request as the script reads it: runs of the model's items (its replies), the calls' outputs.

    A conversation kept by the provider (``previous_response_id``, ``conversation``) is refused: the
    reply is decided by the conversation the program sends, which must be all of it."""
    for kept in ("previous_response_id", "conversation"):
        if body.get(kept) is not None:
            raise Malformed(f"{kept}: this model keeps no conversations; send the whole conversation in input "
                            "(with store=false, as a program that keeps its own state does)")
    model = need(body, "model", str)
    given = body.get("input")
    if not isinstance(given, str | list):
        raise Malformed("input is missing: it is required, a string or an array of items" if given is None else
                        f"input must be a string or an array of items, not {json_type(given)}")
    conversation: list[Said | Result] = []
    calls: list[ToolCall] | None = None  # the reply being read: the model's items since the last other item
    for where, item in objects([] if isinstance(given, str) else given, "input"):
        kind = may(item, "type", str, where) or ("message" if "role" in item else None)
        role = may(item, "role", str, where)
        if kind in ASSISTANT_ITEMS or (kind == "message" and role == "assistant"):
            calls = [] if calls is None else calls
            if kind == "function_call":
                calls.append(ToolCall(need(item, "call_id", str, where), need(item, "name", str, where),
                                      arguments(need(item, "arguments", str, where))))
            continue
        if calls is not None:
            conversation.append(Said(tuple(calls)))
            calls = None
        if kind == "function_call_output":
            output = text_of(item.get("output"), place(where, "output"), ("input_text", "output_text", "text"))
            conversation.append(Result(need(item, "call_id", str, where), output))
        elif kind != "message":
            raise Malformed(f"{place(where, 'type')} {str(kind)[:40]!r} is an item this model does not read "
                            "(it reads messages, function_call, function_call_output and reasoning)")
    if calls is not None:
        conversation.append(Said(tuple(calls)))
    tools = []
    for where, tool in objects(may(body, "tools", list) or [], "tools"):
        if may(tool, "type", str, where) == "function":
            tools.append(Tool(need(tool, "name", str, where), may(tool, "parameters", dict, where)))
    return Asked(tuple(conversation), tuple(tools), model, bool(may(body, "stream", bool)))


def responses_reply(reply: Reply, asked: Asked, ident: str, created: int) -> dict[str, Any] | bytes:
    """The reply as a `Response`, or, if the request streams, as its events."""
    items: list[ResponseFunctionToolCall | ResponseOutputMessage] = [
        ResponseFunctionToolCall(type="function_call", id=f"fc_{call.id}", call_id=f"call_{call.id}", name=call.name,
                                 arguments=encoded(call.arguments), status="completed")
        for call in reply.calls]
    if reply.answer is not None:
        text = ResponseOutputText(type="output_text", text=reply.answer, annotations=[])
        items.append(ResponseOutputMessage(type="message", id=f"msg_{ident}", role="assistant", status="completed",
                                           content=[text]))
    out = reply.answer or "".join(call.arguments for call in items if isinstance(call, ResponseFunctionToolCall))
    usage = ResponseUsage(input_tokens=prompt(asked), output_tokens=tokens(out),
                          total_tokens=prompt(asked) + tokens(out),
                          input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
                          output_tokens_details=OutputTokensDetails(reasoning_tokens=0))

    def response(status: Literal["completed", "in_progress"], output: list[Any]) -> Response:
        return Response(id=f"resp_{ident}", object="response", created_at=created, model=asked.model, status=status,
                        output=output, parallel_tool_calls=True, tool_choice="auto", tools=[], error=None,
                        incomplete_details=None, instructions=None, metadata={},
                        usage=usage if status == "completed" else None)

    whole = response("completed", items)
    if not asked.stream:
        return dumped(whole)
    events: list[Any] = []

    def event(kind: type, **fields: Any) -> None:
        events.append(kind(sequence_number=len(events), **fields))

    event(ResponseCreatedEvent, type="response.created", response=response("in_progress", []))
    event(ResponseInProgressEvent, type="response.in_progress", response=response("in_progress", []))
    for index, item in enumerate(items):
        if isinstance(item, ResponseFunctionToolCall):
            said: dict[str, Any] = {"item_id": item.id, "output_index": index}
            event(ResponseOutputItemAddedEvent, type="response.output_item.added", output_index=index,
                  item=item.model_copy(update={"arguments": "", "status": "in_progress"}))
            event(ResponseFunctionCallArgumentsDeltaEvent, type="response.function_call_arguments.delta",
                  delta=item.arguments, **said)
            event(ResponseFunctionCallArgumentsDoneEvent, type="response.function_call_arguments.done",
                  arguments=item.arguments, **said)
        else:
            part = item.content[0]
            said = {"item_id": item.id, "output_index": index, "content_index": 0}
            event(ResponseOutputItemAddedEvent, type="response.output_item.added", output_index=index,
                  item=item.model_copy(update={"content": [], "status": "in_progress"}))
            event(ResponseContentPartAddedEvent, type="response.content_part.added",
                  part=part.model_copy(update={"text": ""}), **said)
            event(ResponseTextDeltaEvent, type="response.output_text.delta", delta=reply.answer, logprobs=[], **said)
            event(ResponseTextDoneEvent, type="response.output_text.done", text=reply.answer, logprobs=[], **said)
            event(ResponseContentPartDoneEvent, type="response.content_part.done", part=part, **said)
        event(ResponseOutputItemDoneEvent, type="response.output_item.done", output_index=index, item=item)
    event(ResponseCompletedEvent, type="response.completed", response=whole)
    return sse((e.type, dumped(e)) for e in events)


def responses_heard(data: bytes, stream: bool) -> Heard:
    """The reply a model gave on Responses, a `Response` or the events that end in ``response.completed``."""
    if stream:
        completed = [event for name, event in events(data) if isinstance(event, dict)
                     and (event.get("type") or name) == "response.completed"]
        if not completed:
            raise Malformed("a Responses stream that never says response.completed")
        response = validated(ResponseCompletedEvent, completed[-1], "a response.completed event").response
    else:
        response = validated(Response, answer_of(data), "a Response")
    calls = tuple(ToolCall(item.call_id, item.name, arguments(item.arguments)) for item in response.output
                  if isinstance(item, ResponseFunctionToolCall))
    text = "".join(part.text for item in response.output if isinstance(item, ResponseOutputMessage)
                   for part in item.content if isinstance(part, ResponseOutputText))
    return Heard(calls, text)
