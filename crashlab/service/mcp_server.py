"""The service's MCP server: its tools, what they promise, where a key travels, and the Tasks extension.

A loop built on an MCP client calls the same tracker as one that speaks plain HTTP: the same
`Service`, the same records, the same control line. The revision is 2026-07-28, the newest the SDK
speaks (mcp 2.3.0: ``LATEST_MODERN_VERSION`` in ``mcp_types/version.py``): every request stands
alone, with no ``initialize`` and no session, and a client learns the server's capabilities from
``server/discover``; a client on a handshake-era revision (2024-11-05 to 2025-11-25) is answered too,
by the SDK, without a session either.

An idempotency key travels in the request (`crashlab.service.mcp_keys`: SEP-3182's
``idempotencyKey``, in the params or in ``_meta``, or the argument ``idempotency_key``) and means
what the Idempotency-Key header means: a keyed tracker answers a retry under it with the first
issue's number (``replayed`` says so), whichever transport either request came by. A keyed service
says so as SEP-3182 asks, with the capability ``tools.idempotency``: under ``experimental``, for the
SDK's 2026-07-28 wire keeps only the fields it knows in ``capabilities.tools``.

Each tool's annotations say what the service keeps (`hints`), and a client that declares the Tasks
extension gets a durable task for a changing call (`crashlab.service.mcp_tasks`). The SDK is imported
here at once: `crashlab.service.mcp` imports this module on the endpoint's first request only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from crashlab.service.control import LineBroken
from crashlab.service.mcp_keys import key_sent
from crashlab.service.mcp_tasks import Tasks
from crashlab.service.tracker import Answer, Refused, Service

#: SEP-3182's capability: the server honours ``idempotencyKey`` on ``tools/call``.
IDEMPOTENCY = "tools.idempotency"


def outcome(answer: Answer) -> dict[str, Any]:
    """A tool's result: the response's body, or an error the model reads, with the status a client would see."""
    if answer.status >= 400:
        raise ToolError(f"{answer.status}: {answer.body.get('error', '')}")
    return {**answer.body, "replayed": True} if answer.replayed else answer.body


def honours_keys(service: Service) -> bool:
    """Whether a retry under a key this service keeps is answered, not applied again: a keyed tracker's rule (a
    profile that honours no key, ``none``, makes the tracker keyless)."""
    return service.tracker == "keyed"


def hints(service: Service) -> dict[str, ToolAnnotations]:
    """Each tool's annotations, as this service keeps its promises.

    A changing tool is idempotent only when every call to it carries a key the service honours: a keyed
    tracker with keys required (and then for the retention, which its description gives). With keys
    optional, a call without one files again, so it is not. A lookup under a fencing tracker fences the
    key: a change, made once. A client may not trust any hint (MCP's own rule): the key is the promise."""
    changing = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False,
                               idempotent_hint=honours_keys(service) and service.keys_required)
    reading = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    fencing = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                              open_world_hint=False)
    person = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=True)
    return {"create_issue": changing, "comment": changing, "search": reading,
            "lookup": fencing if service.tracker == "fencing" else reading, "ask_person": person,
            "request_approval": ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                                open_world_hint=True)}


def retry_rule(service: Service) -> str:
    """What a retry under the same key gets here, in a sentence a model reads in the tool's description."""
    if honours_keys(service):
        within = "" if service.kept_for is None else f" within {service.kept_for:g} h"
        return f"a retry under the same key{within} gets the first answer and changes nothing"
    return f"this {service.tracker} tracker does not honour a key: a retry is applied again"


class Idempotency:
    """Middleware that adds SEP-3182's capability to ``server/discover``'s answer, under ``experimental``."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "server/discover" and isinstance(result, dict):
            capabilities = result.setdefault("capabilities", {})
            capabilities.setdefault("experimental", {})[IDEMPOTENCY] = {}
        return result


def build_server(service: Service) -> MCPServer:
    """An MCP server whose tools call `service` as the HTTP routes do, refusals and all."""
    async def change(tool: str, arguments: dict[str, Any], key: object) -> Answer:
        """Apply a changing call, as a tool or as a task's work: what the HTTP route would answer."""
        if tool == "create_issue":
            payload = {"title": arguments["title"], "body": arguments.get("body", "")}
            return await service.answer(tool, key, lambda: service.create_issue(payload, key))
        return await service.answer(tool, key, lambda: service.comment(arguments["issue"], {"body": arguments["body"]},
                                                                        key))

    annotations, rule = hints(service), retry_rule(service)
    server: MCPServer = MCPServer("crashlab-tracker", instructions=service.describe(), log_level="WARNING",
                                  extensions=[Tasks(service, change)],
                                  middleware=[Idempotency()] if honours_keys(service) else [])

    async def changed(ctx: Context, tool: str, arguments: dict[str, Any], argument: str | None) -> dict[str, Any]:
        try:
            try:
                key = key_sent(ctx.request_context.params, argument)
            except Refused as refused:  # reported as the tracker reports its own refusals
                await service.report("refused", tool, {"status": refused.status, "key": None})
                raise ToolError(f"{refused.status}: {refused.message}") from None
            return outcome(await change(tool, arguments, key))  # the tracker checks the key
        except LineBroken:
            raise ToolError("503: the harness's control line is gone: the service is stopping") from None

    async def call(label: str, work: Callable[[], Awaitable[Answer]]) -> dict[str, Any]:
        try:
            return outcome(await service.answer(label, None, work))
        except LineBroken:
            raise ToolError("503: the harness's control line is gone: the service is stopping") from None

    @server.tool(annotations=annotations["create_issue"],
                 description=f"File an issue; its number. Send an idempotency key with it: {rule}.")
    async def create_issue(title: str, ctx: Context, body: str = "", idempotency_key: str | None = None
                           ) -> dict[str, Any]:
        return await changed(ctx, "create_issue", {"title": title, "body": body}, idempotency_key)

    @server.tool(annotations=annotations["comment"],
                 description=f"Comment on an issue; the comment's number. Send an idempotency key with it: {rule}.")
    async def comment(issue: int, body: str, ctx: Context, idempotency_key: str | None = None) -> dict[str, Any]:
        return await changed(ctx, "comment", {"issue": issue, "body": body}, idempotency_key)

    @server.tool(annotations=annotations["search"])
    async def search(query: str) -> dict[str, Any]:
        """The issues whose title or body holds `query`, whatever its case."""
        return await call("search", lambda: service.search(query))

    @server.tool(annotations=annotations["lookup"])
    async def lookup(idempotency_key: str) -> dict[str, Any]:
        """Whether a request under this key landed: found, and the response kept under it."""
        answer = await service.answer("key", idempotency_key, lambda: service.lookup(idempotency_key))
        if answer.status == 404:
            return {"found": False}
        return {"found": True, **outcome(answer)}

    @server.tool(annotations=annotations["ask_person"])
    async def ask_person(title: str | None = None, issue: int | None = None,
                         body: str | None = None) -> dict[str, Any]:
        """Ask the person on call whether an issue with this title, or this comment on this issue, was made."""
        question = {name: value for name, value in (("title", title), ("issue", issue), ("body", body))
                    if value is not None}
        return await call("person", lambda: service.ask(question))

    @server.tool(annotations=annotations["request_approval"])
    async def request_approval(action: str) -> dict[str, Any]:
        """Ask the person to approve an action before it is taken."""
        return await call("person", lambda: service.approve({"action": action}))

    return server
