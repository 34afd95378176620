"""A model provider of the tests' own: an HTTP server that answers OpenAI's Chat Completions as the triage job's
model would, reading the conversation it is sent, as a real provider does. It imports nothing of crashlab's.

Its tool-call IDs are its own (``call_`` and a random hex), as a real provider's are; the comment names the
issue number A's result gave. ``/garbage/v1`` answers every request with a page that is no reply.
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


def replies(messages: list[dict[str, Any]]) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """The next reply to `messages`: its tool calls, or its answer."""
    said = [m for m in messages if m["role"] == "assistant"]
    if not said:
        return [("create_issue", {"title": "Login fails on Safari", "body": "Users report a blank page after login."}),
                ("create_issue", {"title": "Export times out", "body": "CSV export of large projects times out."})], None
    if len(said) == 1:
        first = said[0]["tool_calls"][0]["id"]
        result = next(m["content"] for m in messages if m["role"] == "tool" and m["tool_call_id"] == first)
        return [("search", {"query": "login"}),
                ("comment", {"issue": json.loads(result)["number"],
                             "body": "Same root cause as the session-cookie bug; see search."})], None
    return [], ANSWER


def completion(body: dict[str, Any]) -> bytes:
    """A Chat Completion, or its chunks if the request streams."""
    calls, answer = replies(body["messages"])
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


class Provider(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.startswith("/garbage/"):
            self.answer(200, "text/html", b"<html>a page, not a model</html>")
        elif self.path == "/v1/chat/completions":
            stream = bool(body.get("stream"))
            self.answer(200, "text/event-stream" if stream else "application/json", completion(body))
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
