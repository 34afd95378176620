"""What may come in: the checks every request passes before any route's handler, MCP's too, sees it.

A request reaches a handler whole: its body read to the end (a larger one than `MAX_BODY` is
drained and refused with 413, so the client hears why instead of a reset while it still sends),
and a client that hangs up before its body is whole is one line on stderr. Starlette would raise
`ClientDisconnect` inside the handler, and uvicorn, or the MCP SDK, print it as a traceback of 49
lines or more: 3,000 hang-ups wrote 147,005 lines (issue 39).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The largest request body read, in bytes; a larger one is drained and refused with 413.
MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Body:
    """A request's body as it came: what was kept of it, and its whole size, larger when too large to keep."""

    data: bytes
    size: int


async def whole_body(receive: Receive) -> Body | None:
    """The body to its end, keeping at most `MAX_BODY` bytes; None if the client hung up before the end."""
    data, size = bytearray(), 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= MAX_BODY:
            data += chunk
        if not message.get("more_body", False):
            return Body(bytes(data), size)


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the app: the body read, in one message, then what the server sends (a disconnect)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


class Doors:
    """The service's app behind its doors: a request gets in whole, or is turned away in one line."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await whole_body(receive)
        if body is None:
            print(f"crashlab service: {scope['method']} {scope['path'][:200]}: the client hung up before its body "
                  "was whole; nothing of it was done", file=sys.stderr, flush=True)
            return
        if body.size > MAX_BODY:
            refused = JSONResponse({"error": f"the body is {body.size} bytes, more than {MAX_BODY}"}, 413)
            await refused(scope, receive, send)
            return
        await self.app(scope, replay(body.data, receive), send)
