"""The service's tools over MCP (the official SDK, streamable HTTP), at `PATH` in the same app.

A loop built on an MCP client calls the same tracker as one that speaks plain HTTP: the same
`Service`, the same records, the same control line. MCP has no request headers a tool can see, so
the idempotency key travels as the tool argument ``idempotency_key``, and means what the
Idempotency-Key header means: a keyed tracker answers a retry under it with the first issue's
number (``replayed`` says so), whichever transport either request came by.

The endpoint is stateless and answers in JSON, so a loop killed mid-call leaves no session behind.
It is built on its first request: the SDK takes a third of a second to import, which a harness that
restarts the service at every crash, for a loop that speaks plain HTTP, should not pay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from crashlab.service.control import LineBroken
from crashlab.service.tracker import Answer, Service

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

#: Where the MCP endpoint answers; a client connects to the service's URL plus this.
PATH = "/mcp"


def outcome(answer: Answer) -> dict[str, Any]:
    """A tool's result: the response's body, or an error the model reads, with the status a client would see."""
    from mcp.server.mcpserver.exceptions import ToolError

    if answer.status >= 400:
        raise ToolError(f"{answer.status}: {answer.body.get('error', '')}")
    return {**answer.body, "replayed": True} if answer.replayed else answer.body


def build_server(service: Service) -> MCPServer:
    """An MCP server whose tools call `service` as the HTTP routes do, refusals and all."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server: MCPServer = MCPServer("crashlab-tracker", instructions=service.describe(), log_level="WARNING")

    async def call(label: str, key: str | None, payload: dict[str, Any],
                   work: Callable[[dict[str, Any]], Awaitable[Answer]]) -> dict[str, Any]:
        try:
            return outcome(await service.answer(label, key, lambda: work(payload)))
        except LineBroken:
            raise ToolError("503: the harness's control line is gone: the service is stopping") from None

    @server.tool()
    async def create_issue(title: str, body: str = "", idempotency_key: str | None = None) -> dict[str, Any]:
        """File an issue; its number. Retry under the same idempotency_key: a keyed tracker files it once."""
        return await call("create_issue", idempotency_key, {"title": title, "body": body},
                          lambda payload: service.create_issue(payload, idempotency_key))

    @server.tool()
    async def comment(issue: int, body: str, idempotency_key: str | None = None) -> dict[str, Any]:
        """Comment on an issue; the comment's number. Retry under the same idempotency_key."""
        return await call("comment", idempotency_key, {"body": body},
                          lambda payload: service.comment(issue, payload, idempotency_key))

    @server.tool()
    async def search(query: str) -> dict[str, Any]:
        """The issues whose title or body holds `query`, whatever its case."""
        return await call("search", None, {}, lambda payload: service.search(query))

    @server.tool()
    async def lookup(idempotency_key: str) -> dict[str, Any]:
        """Whether a request under this key landed: found, and the response kept under it."""
        answer = await service.answer("key", idempotency_key, lambda: service.lookup(idempotency_key))
        if answer.status == 404:
            return {"found": False}
        return {"found": True, **outcome(answer)}

    @server.tool()
    async def ask_person(title: str | None = None, issue: int | None = None,
                         body: str | None = None) -> dict[str, Any]:
        """Ask the person on call whether an issue with this title, or this comment on this issue, was made."""
        question = {name: value for name, value in (("title", title), ("issue", issue), ("body", body))
                    if value is not None}
        return await call("person", None, question, service.ask)

    @server.tool()
    async def request_approval(action: str) -> dict[str, Any]:
        """Ask the person to approve an action before it is taken."""
        return await call("person", None, {"action": action}, service.approve)

    return server


class LazyMcp:
    """The MCP endpoint as an ASGI app, built and started on its first request, stopped by `close`."""

    def __init__(self, service: Service):
        self.service = service
        self._app: ASGIApp | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._running: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            app = await self._started()
        except ModuleNotFoundError as missing:  # the SDK is an extra: plain HTTP works without it
            message = f"MCP needs the {missing.name} package: pip install 'crashlab[mcp]'"
            await JSONResponse({"error": message}, 501)(scope, receive, send)
            return
        await app(scope, receive, send)

    async def _started(self) -> ASGIApp:
        async with self._lock:
            if self._app is None:
                from mcp.server.transport_security import TransportSecuritySettings

                server = build_server(self.service)
                # The service's doors check Host and Origin for every route, this one too, by one rule:
                # the SDK's own check, which refused `Host: localhost` without a port, would be a second.
                unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
                app = server.streamable_http_app(streamable_http_path=PATH, json_response=True, stateless_http=True,
                                                 transport_security=unchecked)
                ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._running = asyncio.create_task(self._run(server, ready))
                await ready
                self._app = app
        return self._app

    async def _run(self, server: MCPServer, ready: asyncio.Future[None]) -> None:
        """Hold the SDK's session manager open, in a task of its own, until `close`."""
        try:
            async with server.session_manager.run():
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as failure:
            if not ready.done():
                ready.set_exception(failure)
            raise

    async def close(self) -> None:
        self._stop.set()
        if self._running is not None:
            await self._running
