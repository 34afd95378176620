"""What may come in: the checks every request passes before any route's handler, MCP's too, sees it.

The service listens on loopback, where a web page on the developer's machine still reaches it: by
a plain cross-site request (a form's POST, a ``fetch`` that asks nothing first), or by DNS
rebinding, a name of the page's own that resolves to 127.0.0.1 once the page has loaded. Issue 39
wiped a service's records with one such POST. A page cannot choose the Host it sends, which names
its own site; it sends its Origin; and it cannot send ``Content-Type: application/json`` to another
site without asking first (a CORS preflight, which the service never answers yes). So a request
is let in only if its Host is a loopback name or the address the service listens on (421
otherwise), its Origin, if it has one, is the same (403), and its body, if it has one, is JSON
(415): before any handler could change anything. The harness's controls (``/_crashlab/*``: reset
wipes everything) also need the token the service printed as it started (`Token`, 401 without
it), which only the process that started it read, and no page can know.

A request reaches a handler whole: its body read to the end (a larger one than `MAX_BODY` is
drained and refused with 413, so the client hears why instead of a reset while it still sends),
and a client that hangs up before its body is whole is one line on stderr. Starlette would raise
`ClientDisconnect` inside the handler, and uvicorn, or the MCP SDK, print it as a traceback of 49
lines or more: 3,000 hang-ups wrote 147,005 lines (issue 39).
"""

from __future__ import annotations

import hmac
import ipaddress
import sys
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The largest request body read, in bytes; a larger one is drained and refused with 413.
MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Bound:
    """Where the service listens, which says what a request may name as its host.

    A loopback name (``localhost``, 127.0.0.0/8, ``[::1]``) at any port is this machine, reached
    directly or through a tunnel. Any other host must be the address the service is bound to, at
    its port; bound to every address (``0.0.0.0``, ``::``), any address written as an IP at its
    port, since a name is what rebinding needs and an IP cannot be rebound.
    """

    address: str
    port: int

    @property
    def where(self) -> str:
        """The address and port as a URL writes them (an IPv6 address in brackets)."""
        return f"[{self.address}]:{self.port}" if ":" in self.address else f"{self.address}:{self.port}"

    def admits(self, host: str, port: int) -> bool:
        if host == "localhost":
            return True
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        if ip.is_loopback:
            return True
        bound = ipaddress.ip_address(self.address)
        return port == self.port and (bound.is_unspecified or ip == bound)

    def admits_origin(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
            return False
        host = authority(parts.netloc)
        return host is not None and self.admits(host[0], port or (80 if parts.scheme == "http" else 443))


def authority(value: str) -> tuple[str, int | None] | None:
    """A Host header's name, lower-cased, and port (None if it gives none); None if it is not ``host[:port]``."""
    try:
        parts = urlsplit("//" + value)
        port = parts.port
    except ValueError:
        return None
    if parts.netloc != value or "@" in value or not parts.hostname:
        return None
    return parts.hostname, port


class Token:
    """An app that answers only a request that carries `token` as ``Authorization: Bearer TOKEN``."""

    def __init__(self, app: ASGIApp, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.holds(Headers(scope=scope)):
            refused = JSONResponse({"error": "the harness's controls need the token the service printed as it started: "
                                             "send Authorization: Bearer TOKEN"}, 401,
                                   headers={"WWW-Authenticate": 'Bearer realm="crashlab"'})
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def holds(self, headers: Headers) -> bool:
        said = headers.getlist("authorization")
        scheme, _, given = said[0].partition(" ") if len(said) == 1 else ("", "", "")
        # Compared in constant time, as bytes: a header is read as Latin-1, which every byte is.
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode("latin-1"), self.token)


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

    def __init__(self, app: ASGIApp, bound: Bound):
        self.app = app
        self.bound = bound

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(Headers(scope=scope))
        if refusal is not None:
            status, message = refusal
            await JSONResponse({"error": message}, status)(scope, receive, send)
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

    def refusal(self, headers: Headers) -> tuple[int, str] | None:
        """Why a request with these headers is turned away, as its status and one line; None if it may come in."""
        hosts = headers.getlist("host")
        host = authority(hosts[0]) if len(hosts) == 1 else None
        if host is None or not self.bound.admits(host[0], 80 if host[1] is None else host[1]):
            said = repr(hosts[0][:80]) if len(hosts) == 1 else f"{len(hosts)} Host headers"
            return 421, (f"Host {said} is not this service's: it answers requests to localhost, 127.0.0.0/8 or [::1], "
                         f"or to {self.bound.where}, where it listens")
        origins = headers.getlist("origin")
        if origins and (len(origins) > 1 or not self.bound.admits_origin(origins[0])):
            return 403, (f"a request from the origin {origins[0][:80]!r} is refused: the service answers pages of "
                         "its own hosts only, and clients that send no Origin")
        types = headers.getlist("content-type")
        sends = "transfer-encoding" in headers or headers.get("content-length", "0") != "0"
        if (types or sends) and (len(types) != 1 or types[0].partition(";")[0].strip().lower() != "application/json"):
            said = repr(types[0][:80]) if len(types) == 1 else "none" if not types else f"{len(types)} types"
            return 415, f"a body is sent as Content-Type: application/json, not {said}"
        return None
