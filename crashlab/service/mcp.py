"""The service's MCP endpoint (the official SDK, streamable HTTP), at `PATH` in the same app.

The server itself, its tools and what they promise, is `crashlab.service.mcp_server`. The endpoint
is stateless and answers in JSON, so a loop killed mid-call leaves no session behind. It is built
on its first request: the SDK takes a third of a second to import, which a harness that restarts
the service at every crash, for a loop that speaks plain HTTP, should not pay.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from crashlab.service.tracker import Service

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

#: Where the MCP endpoint answers; a client connects to the service's URL plus this.
PATH = "/mcp"


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

                from crashlab.service.mcp_server import build_server

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
