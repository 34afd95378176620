"""The service's HTTP face: JSON in and out, the Idempotency-Key header, and the harness's controls.

Every route reads its request, hands it to the `Service` (which holds the rules) and writes back
its `Answer`. An error is ``{"error": "one line"}`` with a 4xx status: a client's mistake, however
hostile (not JSON, the wrong types, a huge body, a key too long), is never a 500.

A replayed response carries the header the service's profile names (``Idempotent-Replayed: true``,
Stripe's, by default). The key comes as ``Idempotency-Key`` or under the profile's own header
(``X-Qonto-Idempotency-Key``), bare, as Stripe takes it, or as the draft's structured-field string,
in double quotes.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from crashlab.service.control import LineBroken
from crashlab.service.doors import Bound, Doors, Token
from crashlab.service.mcp import PATH, LazyMcp
from crashlab.service.model import ROUTES, Model
from crashlab.service.tracker import MAX_NUMBER, Answer, Refused, Service

#: Where the harness's controls are, behind the service's token.
CONTROLS = "/_crashlab"
#: The draft's header, taken under every profile beside the profile's own.
KEY_HEADER = "Idempotency-Key"
#: How long ``GET /_crashlab/pause`` waits for a request to pause, in seconds.
PAUSE_WAIT = 10.0
#: A route's handler: the request in, the service's answer out.
Handler = Callable[[Request], Awaitable[Response]]


def respond(answer: Answer) -> JSONResponse:
    return JSONResponse(answer.body, answer.status, headers=dict(answer.headers) or None)


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status)


async def read_object(request: Request, empty: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request's body as a JSON object; `empty` stands for no body where the route allows none.

    The body is whole and no larger than `MAX_BODY`: the service's doors (`Doors`) saw to that."""
    data = await request.body()
    if not data.strip():
        if empty is not None:
            return empty
        raise Refused(400, "the body is empty: expected a JSON object")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as failure:
        raise Refused(400, f"the body is not JSON ({' '.join(str(failure).split())[:200]})") from None
    if not isinstance(value, dict):
        raise Refused(400, "the body must be a JSON object")
    return value


def header_keys(request: Request, names: tuple[str, ...] = (KEY_HEADER,)) -> list[str]:
    """Each value of the key's headers `names`, bare or as the draft's quoted structured-field string, unquoted."""
    keys = [key for name in names for key in request.headers.getlist(name)]
    return [re.sub(r"\\([\\\"])", r"\1", key[1:-1]) if len(key) >= 2 and key[0] == key[-1] == '"' else key
            for key in keys]


def header_key(request: Request, names: tuple[str, ...] = (KEY_HEADER,)) -> str | None:
    """The request's idempotency key; None if it has none. Two are refused: which one the request means is a
    guess, and a proxy that joins them makes a third."""
    keys = header_keys(request, names)
    if len(keys) > 1:
        raise Refused(400, f"two {' or '.join(names)} headers: a request has one key")
    return keys[0] if keys else None


def path_key(request: Request) -> str:
    return request.path_params["key"]


def issue_number(raw: str) -> int:
    if not re.fullmatch(r"[0-9]{1,19}", raw) or int(raw) < 1 or int(raw) > MAX_NUMBER:
        raise Refused(400, f"the issue number in the path must be a positive integer, not {raw[:40]!r}")
    return int(raw)


def build_app(service: Service, bound: Bound, token: str, model: Model | None = None) -> Starlette:
    """The service's Starlette app behind its doors (`Doors`, for a service listening at `bound`): its routes,
    the MCP endpoint at `PATH`, the `model`'s routes, the harness's controls behind `token`, and the control
    line's life."""
    mcp = LazyMcp(service)
    model = model or Model(service, None)
    names = tuple(dict.fromkeys((KEY_HEADER, service.profile.header)))  # the key's headers, each once

    def said_key(request: Request) -> str | None:
        """The key a refusal of this request is reported under on the control line: its one key, if it has one."""
        keys = header_keys(request, names)
        return keys[0] if len(keys) == 1 else None

    def model_route(api: str) -> Handler:
        """A route of the model's: its body read as any route's is, refused in its wire's error."""
        async def handle(request: Request) -> Response:
            try:
                body = await read_object(request)
            except Refused as refusal:
                return await model.refuse(api, refusal.status, refusal.message)
            return await model.answer(api, body)
        return handle

    def tool(label: str, work: Callable[[Request], Awaitable[Answer]],
             key: Callable[[Request], str | None] = lambda request: None) -> Handler:
        """A route for a tool a loop calls: its refusals, like its events, are reported on the line."""
        async def handle(request: Request) -> Response:
            try:
                return respond(await service.answer(label, key(request), lambda: work(request)))
            except LineBroken:
                return error(503, "the harness's control line is gone: the service is stopping")
        return handle

    async def create_issue(request: Request) -> Answer:
        return await service.create_issue(await read_object(request), header_key(request, names))

    async def comment(request: Request) -> Answer:
        number = issue_number(request.path_params["n"])
        return await service.comment(number, await read_object(request), header_key(request, names))

    async def search(request: Request) -> Answer:
        return await service.search(request.query_params.get("q"))

    async def lookup(request: Request) -> Answer:
        return await service.lookup(path_key(request))

    async def ask(request: Request) -> Answer:
        return await service.ask(await read_object(request))

    async def approve(request: Request) -> Answer:
        return await service.approve(await read_object(request))

    async def model_call(request: Request) -> Answer:
        await read_object(request, empty={})  # a loop may say what the call was; the count is what counts
        return await service.model_call()

    async def reset(request: Request) -> Response:
        service.reset()
        return JSONResponse({"reset": True})

    async def state(request: Request) -> Response:
        return JSONResponse(service.state())

    async def clock(request: Request) -> Response:
        try:
            return JSONResponse({"offset_hours": service.advance(await read_object(request))})
        except Refused as refusal:
            return error(refusal.status, refusal.message)

    async def fail(request: Request) -> Response:
        service.fail_next = True
        return JSONResponse({"armed": True})

    async def pause(request: Request) -> Response:
        if request.method == "POST":
            service.arm_pause()
            return JSONResponse({"armed": True})
        if request.method == "DELETE":
            service.resume()
            return JSONResponse({"resumed": True})
        try:
            return JSONResponse(await service.paused(PAUSE_WAIT))
        except Refused as refusal:
            return error(refusal.status, refusal.message)

    async def land(request: Request) -> Response:
        try:
            return JSONResponse(await service.land())
        except Refused as refusal:
            return error(refusal.status, refusal.message)

    async def not_routed(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error(exc.status_code, f"{request.method} {request.url.path}: {exc.detail.lower()}")

    async def failed(request: Request, exc: Exception) -> Response:
        """A bug of the service's, never a client's mistake: still one JSON line (uvicorn logs the traceback)."""
        return error(500, f"the service failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")

    @asynccontextmanager
    async def life(app: Starlette) -> AsyncIterator[None]:
        if service.line is not None:
            await service.line.open()
        try:
            yield
        finally:
            await mcp.close()
            if service.line is not None:
                await service.line.close()

    routes = [
        Route("/issues", tool("create_issue", create_issue, said_key), methods=["POST"]),
        Route("/issues/{n}/comments", tool("comment", comment, said_key), methods=["POST"]),
        Route("/search", tool("search", search), methods=["GET"]),
        Route("/idempotency/{key:path}", tool("key", lookup, path_key), methods=["GET"]),
        Route("/person/questions", tool("person", ask), methods=["POST"]),
        Route("/person/approvals", tool("person", approve), methods=["POST"]),
        Route("/model/calls", tool("call", model_call), methods=["POST"]),
        Mount(CONTROLS, routes=[
            Route("/reset", reset, methods=["POST"]),
            Route("/state", state, methods=["GET"]),
            Route("/clock", clock, methods=["POST"]),
            Route("/land", land, methods=["POST"]),
            Route("/fail", fail, methods=["POST"]),
            Route("/pause", pause, methods=["POST", "GET", "DELETE"]),
        ], middleware=[Middleware(Token, token=token)]),
        Route(PATH, mcp),
        *(Route(path, model_route(api), methods=["POST"]) for api, path in ROUTES.items()),
    ]
    return Starlette(routes=routes, middleware=[Middleware(Doors, bound=bound)],
                     exception_handlers={HTTPException: not_routed, Exception: failed}, lifespan=life)
