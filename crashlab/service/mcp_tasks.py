"""The Tasks extension on the service's MCP front end: a changing tool call answered with a durable handle.

MCP's 2026-07-28 revision took tasks out of the core and made them an extension, SEP-2663
(``io.modelcontextprotocol/tasks``, read 2026-12-07 at
https://modelcontextprotocol.io/seps/2663-tasks-extension): a client declares the extension in a
request's capabilities, the server decides per request whether to answer with a task (a result of
``resultType: "task"``) instead of the tool's result, and the client polls ``tasks/get`` until the
task is settled; ``tasks/update`` answers a task's questions and ``tasks/cancel`` asks it to stop.
The official SDK (mcp 2.3.0) has the extension machinery (`Extension`, `MethodBinding`, the
``tools/call`` interceptor, ``resultType`` left open for ``"task"``) but not this extension, so it
is built here on that machinery, with the SDK's types where the SEP's shapes are theirs.

Here a client that declares the extension gets a task for every changing call (``create_issue``,
``comment``). In order:

1. the task is committed to the service's file (`crashlab.service.tasks`): a ``tasks/get`` for its
   handle resolves from then on, as the SEP requires before the handle leaves;
2. the service passes its crash point ``task-created``: a sweep may kill the loop there, with the
   task made and its handle never received;
3. the handle leaves.

The work, the tool call itself, is applied by the worker, which runs one task, the oldest still
working, each time any client polls: every run of a sweep applies it at the same place, in the life
of the process that polled, where the tracker passes ``accepted`` as for any request. A task whose
client died is run all the same, at the next poll of anyone's: a loop that lost its handle and makes
a new task makes the effect twice. Its key saves it: under a key the service honours (a keyed
tracker, within its retention), a call under the key of a task already made is answered with that
task's handle, and nothing new is made; the same key with other arguments is refused (422).

Not built: ``input_required`` (no tool of the service asks anything mid-task, so ``tasks/update``
only acknowledges), ``notifications/tasks`` over ``subscriptions/listen``, and tasks for a client
on a handshake-era revision (2025-11-25's experimental tasks, a different wire).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    CancelTaskRequestParams,
    EmptyResult,
    GetTaskRequestParams,
    InputResponses,
    RequestParams,
    Result,
    TaskStatus,
    TextContent,
)

from crashlab.service import tasks
from crashlab.service.control import LineBroken
from crashlab.service.mcp_keys import ARGUMENT, key_sent
from crashlab.service.tasks import Task
from crashlab.service.tracker import Answer, Refused, Service, fields, fingerprint, valid_key

IDENTIFIER = "io.modelcontextprotocol/tasks"
#: The service's crash point between a task's commit and its handle's leaving.
CREATED = "task-created"
#: The tools that run as tasks, and their arguments (required, optional): the changing ones.
TASK_TOOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "create_issue": (("title",), ("body", ARGUMENT)),
    "comment": (("issue", "body"), (ARGUMENT,)),
}

#: Apply a changing call: its tool, its arguments (without the key) and its key; the service's answer.
Change = Callable[[str, dict[str, Any], object], Awaitable[Answer]]


class TaskState(Result):
    """SEP-2663's ``Task``: what ``tasks/get`` answers, and, as ``resultType: "task"``, a call that made one."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None  # a completed task's CallToolResult
    result_type: str = "complete"


class UpdateTaskRequestParams(RequestParams):
    """``tasks/update``'s params: a task, and answers to the questions it asked."""

    task_id: str
    input_responses: InputResponses


def tool_result(answer: Answer) -> dict[str, Any]:
    """The service's answer as the tool's result on the wire: its body, or its refusal as an error the model reads."""
    if answer.status >= 400:
        text = f"{answer.status}: {answer.body.get('error', '')}"
        result = CallToolResult(content=[TextContent(text=text)], is_error=True)
    else:
        body = {**answer.body, "replayed": True} if answer.replayed else answer.body
        result = CallToolResult(content=[TextContent(text=json.dumps(body))], structured_content=body)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def refusal(refused: Refused) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=f"{refused.status}: {refused.message}")], is_error=True)


def declares_tasks(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the request's own capabilities name the extension: the SEP lets a server answer with a task only then."""
    capabilities = (ctx.meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and IDENTIFIER in extensions


def canonical(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments without its key, the optional ones filled in: two calls alike are one request."""
    required, optional = TASK_TOOLS[tool]
    fields(dict(arguments), required, optional)
    if tool == "create_issue":
        return {"title": arguments["title"], "body": arguments.get("body", "")}
    return {"issue": arguments["issue"], "body": arguments["body"]}


def called(tool: str, arguments: Mapping[str, Any]) -> str:
    """The call as the service's frames name it: an issue's title, or the issue a comment is on."""
    return repr(arguments["title"]) if tool == "create_issue" else f"on #{arguments['issue']}"


class Tasks(Extension):
    """The extension, over one `Service`: `change` applies a call when the worker runs its task."""

    identifier = IDENTIFIER

    def __init__(self, service: Service, change: Change):
        self.service = service
        self.change = change

    @property
    def ttl_ms(self) -> int | None:
        """A task is kept as long as a key is: the service's retention (None: for ever)."""
        hours = self.service.kept_for
        return None if hours is None else int(hours * 3600 * 1000)

    def state(self, task: Task, result_type: str = "complete") -> TaskState:
        waiting = "the worker runs one task, the oldest still working, at each tasks/get"
        return TaskState(task_id=task.id, status=task.status, created_at=stamp(task.made),
                         last_updated_at=stamp(task.updated), ttl_ms=self.ttl_ms, poll_interval_ms=0,
                         status_message=waiting if task.status == "working" else None,
                         result=task.result, result_type=result_type)

    def methods(self) -> Sequence[MethodBinding]:
        return (MethodBinding("tasks/get", GetTaskRequestParams, self.get),
                MethodBinding("tasks/update", UpdateTaskRequestParams, self.update),
                MethodBinding("tasks/cancel", CancelTaskRequestParams, self.cancel))

    async def intercept_tool_call(self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any],
                                  call_next: CallNext) -> HandlerResult:
        """A changing call from a client that declared the extension becomes a task; any other goes on as it is."""
        if params.name not in TASK_TOOLS or not declares_tasks(ctx):
            return await call_next(ctx)
        arguments, checked = params.arguments or {}, None
        try:
            try:
                key = key_sent(ctx.params, arguments.get(ARGUMENT))
                checked = None if key is None else valid_key(key)
                if checked is None and self.service.keys == "required":
                    raise Refused(400, f"{params.name} needs an idempotency key: this service runs with keys required")
                return await self.made(params.name, canonical(params.name, arguments), checked)
            except Refused as refused:  # reported as the tracker reports its own refusals
                await self.service.report("refused", params.name, refused.detail(checked))
                return refusal(refused)
        except LineBroken:
            return refusal(Refused(503, "the harness's control line is gone: the service is stopping"))

    async def made(self, tool: str, call: dict[str, Any], key: str | None) -> TaskState:
        """The handle of the task this call names: the one made under its key before, or one made now."""
        store, now = self.service.store, self.service.store.now()
        request = fingerprint("tools/call", tool, call)
        if key is not None and self.service.tracker == "keyed":
            made = tasks.under_key(store, key)
            if made is not None and self.service.fresh(made.made, now):
                if made.fingerprint != request:
                    raise Refused(422, f"key {key!r} was first used for another request: a key names one request, "
                                       "send this one under a new key")
                await self.service.report("task", tool, {"call": called(tool, call), "key": key, "task": made.id,
                                                         "known": True})
                return self.state(made, "task")
        task = tasks.create(store, tool, call, key, request, now)
        await self.service.report("task", tool, {"call": called(tool, call), "key": key, "task": task.id},
                                  point=CREATED)
        return self.state(task, "task")

    async def get(self, ctx: ServerRequestContext[Any, Any], params: GetTaskRequestParams) -> TaskState:
        """Where the task stands, once the worker has run the oldest task still working (this one, or one before)."""
        self.known(params.task_id)
        await self.work()
        return self.state(self.known(params.task_id))

    async def work(self) -> None:
        task = tasks.oldest_working(self.service.store)
        if task is not None:
            answer = await self.change(task.tool, task.arguments, task.key)
            tasks.settle(self.service.store, task.id, "completed", tool_result(answer), self.service.store.now())

    async def update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskRequestParams) -> EmptyResult:
        """No task here asks a question, so every answer is to none outstanding: acknowledged, and ignored."""
        self.known(params.task_id)
        return EmptyResult(result_type="complete")

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: CancelTaskRequestParams) -> EmptyResult:
        """A task still working is cancelled, and its work never runs; a settled one keeps its end."""
        self.known(params.task_id)
        tasks.settle(self.service.store, params.task_id, "cancelled", None, self.service.store.now())
        return EmptyResult(result_type="complete")

    def known(self, task_id: str) -> Task:
        task = tasks.find(self.service.store, task_id)
        if task is None:
            raise MCPError(code=INVALID_PARAMS, message=f"no task {task_id[:40]!r}: this service made none by that ID")
        return task


def stamp(seconds: float) -> str:
    """The service's clock as ISO 8601, as a task's times are written."""
    return datetime.fromtimestamp(seconds, UTC).isoformat()
