"""A model provider of the tests' own: an HTTP server that answers as the triage job's model would, reading the
conversation it is sent, as a real provider does, on each of the three wires the official SDKs speak: OpenAI's
Chat Completions (whole or streamed), OpenAI's Responses and Anthropic's Messages (whole). It imports nothing of
crashlab's, and writes each wire's JSON by hand, as its provider's API reference shows it.

Its tool-call IDs are its own (``call_``, or ``toolu_``, and a random hex), as a real provider's are; the comment
names the issue number A's result gave. ``/garbage/v1`` answers every request with a page that is no reply.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Filed two issues and linked the login report to the cookie bug."


def replies(said: list[list[str]], results: dict[str, str]) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """The next reply to a conversation that holds the replies `said` (each its tool calls' IDs) and the calls'
    `results` by ID: its tool calls, or its answer."""
    if not said:
        return [("create_issue", {"title": "Login fails on Safari", "body": "Users report a blank page after login."}),
                ("create_issue", {"title": "Export times out", "body": "CSV export of large projects times out."})], None
    if len(said) == 1:
        return [("search", {"query": "login"}),
                ("comment", {"issue": json.loads(results[said[0][0]])["number"],
                             "body": "Same root cause as the session-cookie bug; see search."})], None
    return [], ANSWER


def text(content: str | list[dict[str, Any]]) -> str:
    """A result's content, a string or its text blocks."""
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def completion(body: dict[str, Any]) -> bytes:
    """A Chat Completion, or its chunks if the request streams."""
    messages = body["messages"]
    calls, answer = replies(
        [[call["id"] for call in m.get("tool_calls") or []] for m in messages if m["role"] == "assistant"],
        {m["tool_call_id"]: text(m["content"]) for m in messages if m["role"] == "tool"})
    tool_calls = [{"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                   "function": {"name": name, "arguments": json.dumps(args)}} for name, args in calls]
    head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": 1700000000, "model": body["model"]}
    finish = "tool_calls" if tool_calls else "stop"
    if not body.get("stream"):
        message = {"role": "assistant", "content": answer, **({"tool_calls": tool_calls} if tool_calls else {})}
        return json.dumps({**head, "object": "chat.completion", "choices": [
            {"index": 0, "message": message, "finish_reason": finish}]}).encode()
    deltas = [{"role": "assistant", "content": answer or ""}]
    deltas += [{"tool_calls": [{"index": k, **call}]} for k, call in enumerate(tool_calls)]
    chunks = [{"index": 0, "delta": delta, "finish_reason": None} for delta in deltas]
    chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
    return "".join(f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', 'choices': [chunk]})}\n\n"
                   for chunk in chunks).encode() + b"data: [DONE]\n\n"


def response(body: dict[str, Any]) -> bytes:
    """A Response: a reply is a run of the model's items in `input` (its function calls, or its message)."""
    items = [] if isinstance(body["input"], str) else body["input"]
    said: list[list[str]] = []
    replying = False
    for item in items:
        mine = item.get("type") == "function_call" or (item.get("type", "message") == "message"
                                                        and item.get("role") == "assistant")
        if mine and not replying:
            said.append([])
        if item.get("type") == "function_call":
            said[-1].append(item["call_id"])
        replying = mine
    calls, answer = replies(said, {item["call_id"]: text(item["output"]) for item in items
                                   if item.get("type") == "function_call_output"})
    output: list[dict[str, Any]] = [
        {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}", "call_id": f"call_{uuid.uuid4().hex[:24]}",
         "name": name, "arguments": json.dumps(args), "status": "completed"} for name, args in calls]
    if answer is not None:
        output.append({"type": "message", "id": f"msg_{uuid.uuid4().hex}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": answer, "annotations": []}]})
    return json.dumps({"id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": 1700000000,
                       "model": body["model"], "status": "completed", "output": output, "parallel_tool_calls": True,
                       "tool_choice": "auto", "tools": body.get("tools", [])}).encode()


def message(body: dict[str, Any]) -> bytes:
    """A Message: a reply is an assistant message, its calls ``tool_use`` blocks, their results ``tool_result``
    blocks in the user's messages after it."""
    messages = body["messages"]
    blocks = [block for m in messages if not isinstance(m["content"], str) for block in m["content"]]
    calls, answer = replies(
        [[block["id"] for block in m["content"] if block["type"] == "tool_use"] for m in messages
         if m["role"] == "assistant"],
        {block["tool_use_id"]: text(block["content"]) for block in blocks if block["type"] == "tool_result"})
    content = [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": args}
               for name, args in calls] or [{"type": "text", "text": answer}]
    return json.dumps({"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                       "model": body["model"], "content": content, "stop_reason": "tool_use" if calls else "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()


class Provider(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.startswith("/garbage/"):
            self.answer(200, "text/html", b"<html>a page, not a model</html>")
        elif self.path == "/v1/chat/completions":
            stream = bool(body.get("stream"))
            self.answer(200, "text/event-stream" if stream else "application/json", completion(body))
        elif self.path in ("/v1/responses", "/v1/messages") and body.get("stream"):
            self.answer(400, "application/json", b'{"error": {"message": "it streams chat completions only"}}')
        elif self.path == "/v1/responses":
            self.answer(200, "application/json", response(body))
        elif self.path == "/v1/messages":
            self.answer(200, "application/json", message(body))
        else:
            self.answer(404, "application/json", b'{"error": {"message": "no such route"}}')

    def answer(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def provider() -> Iterator[str]:
    """The provider, serving on 127.0.0.1 while the block runs: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
