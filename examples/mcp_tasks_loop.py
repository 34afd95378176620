"""The triage loop of http_loop.py with MCP tasks: each changing call answered with a handle, polled to its end.

It speaks MCP 2026-07-28 with the official client and declares the Tasks extension (SEP-2663,
``io.modelcontextprotocol/tasks``), so the service answers ``create_issue`` and ``comment`` with a
task: a handle, committed on the server before it leaves, whose result the loop polls with
``tasks/get``. The SDK's client has the extension's hooks but not the extension, so the few types
it needs are here. Three ways to use it:

- ``plain`` keeps nothing but each step's result: a restart makes its call again, a new task;
- ``handle`` also saves each handle as it receives it, so a restart polls the task it had instead
  of making another (as the SEP says a client SHOULD);
- ``keyed`` also sends each call under a key of its run ID and step (SEP-3182's ``idempotencyKey``,
  in ``_meta``: the SDK's client adds nothing else to a call's params), so a restart that never
  received its handle makes the call again and is given the same task.

It imports its sibling, ``http_loop``, for the steps and the saving. Sweep it as the HTTP loop is swept::

    crashlab sweep --loop examples/mcp_tasks_loop.py:plain,handle,keyed --effects examples/http_loop.yaml
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any, Literal

import mcp
from http_loop import STEPS, begin, point, save
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp_types import CallToolResult, Request, RequestParams, Result


class TaskHandle(Result):
    """What a call answered with a task carries: the task's ID and where it stands (``resultType: "task"``)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskState(Result):
    """What ``tasks/get`` answers: where the task stands, and a completed task's tool result."""

    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None


class TaskParams(RequestParams):
    task_id: str


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"  # the SEP routes tasks/* by the task's ID, in the Mcp-Name header


async def poll(session: ClientSession, task_id: str) -> CallToolResult:
    """Ask after the task until it is settled; its tool result."""
    while True:
        state = await session.send_request(GetTask(params=TaskParams(task_id=task_id)), TaskState)
        if state.status == "completed" and state.result is not None:
            return CallToolResult.model_validate(state.result)
        if state.status in ("failed", "cancelled"):
            raise RuntimeError(f"task {task_id} {state.status}: {state.status_message or ''}")
        await asyncio.sleep(0.01)


class Tasks(ClientExtension):
    """The Tasks extension, declared on every request; a claimed handle is polled to its result."""

    identifier = "io.modelcontextprotocol/tasks"

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, context: ClaimContext) -> CallToolResult:
        return await poll(context.session, handle.task_id)


async def triage(keyed: bool, handles: bool) -> None:
    saved, progress = begin()
    done, tasks = progress["done"], progress.setdefault("tasks", {})
    async with mcp.Client(os.environ.get("CRASHLAB_MCP_URL", "http://127.0.0.1:8000/mcp"),
                          extensions=[Tasks()]) as client:
        for step, kind, text in STEPS:
            if step in done:
                continue
            if step not in tasks:
                tool = "create_issue" if kind == "issue" else "comment"
                arguments: dict[str, Any] = {"title": text} if kind == "issue" else {"issue": done["A"], "body": text}
                meta: Any = {"idempotencyKey": f"{progress['run']}:{step}"} if keyed else None
                handle = await client.session.call_tool(tool, arguments, meta=meta, allow_claimed=True)
                if not isinstance(handle, TaskHandle):
                    raise RuntimeError(f"{tool} was answered without a task: {handle}")
                tasks[step] = handle.task_id
                if handles:
                    save(saved, progress)
                    point("handle-saved")
            result = await poll(client.session, tasks[step])
            if result.is_error:
                raise RuntimeError(f"step {step}: {result.content[0].text}")
            done[step] = result.structured_content["number"]
            point("answered")
            save(saved, progress)
            point("saved")


def plain() -> None:
    asyncio.run(triage(keyed=False, handles=False))


def handle() -> None:
    asyncio.run(triage(keyed=False, handles=True))


def keyed() -> None:
    asyncio.run(triage(keyed=True, handles=True))
