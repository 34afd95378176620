"""MCP as specified now: the 2026-07-28 revision, SEP-3182's key, truthful hints, and tasks (SEP-2663).

The server is the service's own (`build_server`), reached in process by the official client, which
speaks 2026-07-28 to it as it does over HTTP. A task is committed to the service's file before its
handle leaves; its work runs once, at a poll; a call remade under its key gets the same task; a
task whose client died runs all the same, so a client that makes a new one makes the effect twice.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from crashlab.profiles import find
from crashlab.service.store import Store
from crashlab.service.tracker import Service

mcp = pytest.importorskip("mcp")

from mcp.client.extension import ClientExtension, ResultClaim  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import CallToolRequest, CallToolRequestParams, CallToolResult, Request, RequestParams, Result  # noqa: E402
from mcp_types.version import LATEST_PROTOCOL_VERSION  # noqa: E402

from crashlab.service.mcp_server import build_server  # noqa: E402

EFFECTS = "examples/http_loop.yaml"
LOOP = "examples/mcp_tasks_loop.py"


class Handle(Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class State(Result):
    task_id: str
    status: str
    result: dict[str, Any] | None = None


class TaskParams(RequestParams):
    task_id: str


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class KeyedParams(CallToolRequestParams):
    """SEP-3182's ``tools/call`` params: an ``idempotencyKey`` beside the name and arguments."""

    idempotency_key: str


class KeyedCall(CallToolRequest):
    params: KeyedParams


async def never(handle: Handle, context: Any) -> CallToolResult:
    raise AssertionError("the tests take the handle themselves")


class Tasks(ClientExtension):
    identifier = "io.modelcontextprotocol/tasks"

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=Handle, resolve=never)]


class Line:
    """A control line that says go to every frame, and keeps what the service's file held as each came."""

    def __init__(self, path: Path):
        self.path, self.frames = path, []

    async def report(self, kind: str, label: str, detail: dict[str, Any], point: str | None = None) -> dict[str, Any]:
        committed = sqlite3.connect(self.path)  # another connection sees only what was committed
        try:
            held = committed.execute("SELECT seq, status FROM tasks").fetchall()
        finally:
            committed.close()
        self.frames.append((kind, point, detail.get("task"), held))
        return {"go": True}


def service(tmp_path: Path, **options: Any) -> Service:
    path = tmp_path / "service.sqlite"
    return Service(Store(path), line=Line(path), **options)  # type: ignore[arg-type]  # the line's one method


def session(served: Service, work: Callable[[Any], Awaitable[Any]], tasks: bool = True) -> Any:
    async def go() -> Any:
        async with mcp.Client(build_server(served), extensions=[Tasks()] if tasks else None) as client:
            return await work(client)

    return asyncio.run(go())


async def make(client: Any, title: str, key: str | None = None) -> Any:
    meta = {"idempotencyKey": key} if key is not None else None
    return await client.session.call_tool("create_issue", {"title": title}, meta=meta, allow_claimed=True)


async def get(client: Any, task_id: str) -> State:
    return await client.session.send_request(GetTask(params=TaskParams(task_id=task_id)), State)


def records(served: Service) -> list[tuple[str | None, str | None]]:
    return [(r.title, r.key) for r in served.store.records()]


def test_the_service_speaks_the_newest_revision_the_sdk_knows_and_says_what_it_honours(tmp_path):
    async def work(client: Any) -> Any:
        return client.protocol_version, client.server_capabilities, await client.list_tools()

    version, capabilities, listed = session(service(tmp_path), work)
    assert version == LATEST_PROTOCOL_VERSION == "2026-07-28"
    assert capabilities.extensions == {"io.modelcontextprotocol/tasks": {}}
    assert capabilities.experimental == {"tools.idempotency": {}}
    hints = {tool.name: tool.annotations for tool in listed.tools}
    assert (hints["search"].read_only_hint, hints["search"].idempotent_hint) == (True, True)
    assert hints["create_issue"].idempotent_hint is False  # keys optional: a call without one files again
    assert "within 24 h" in {tool.name: tool.description for tool in listed.tools}["create_issue"]


@pytest.mark.parametrize(("options", "idempotent", "capability"), [
    ({"keys": "required"}, True, True),
    ({"tracker": "keyless", "keys": "required"}, False, False),
    ({"tracker": "lookup"}, False, False),
    ({"profile": find("acp")}, True, True),  # the contract requires a key of every call
    ({"profile": find("none"), "keys": "required"}, False, False),  # the contract honours none
])
def test_a_changing_tool_is_idempotent_only_when_every_call_carries_a_key_the_service_honours(
        tmp_path, options, idempotent, capability):
    async def work(client: Any) -> Any:
        return client.server_capabilities, await client.list_tools()

    capabilities, listed = session(service(tmp_path, **options), work)
    hints = {tool.name: tool.annotations for tool in listed.tools}
    assert (hints["create_issue"].idempotent_hint, hints["comment"].idempotent_hint) == (idempotent, idempotent)
    assert ("tools.idempotency" in (capabilities.experimental or {})) is capability


def test_a_key_is_taken_from_sep_3182s_params_field_from_meta_or_from_the_argument(tmp_path):
    served = service(tmp_path)

    async def work(client: Any) -> list[Any]:
        sep = KeyedCall(params=KeyedParams(name="create_issue", arguments={"title": "Login fails"}, idempotency_key="k"))
        return [await client.session.send_request(sep, CallToolResult),
                await client.call_tool("create_issue", {"title": "Login fails"}, meta={"idempotencyKey": "k"}),
                await client.call_tool("create_issue", {"title": "Login fails", "idempotency_key": "k"}),
                await client.call_tool("create_issue", {"title": "Login fails", "idempotency_key": "k"},
                                       meta={"idempotencyKey": "other"})]

    first, meta, argument, two = session(served, work, tasks=False)
    assert first.structured_content == {"number": 1}
    assert meta.structured_content == argument.structured_content == {"number": 1, "replayed": True}
    assert two.is_error and "name two idempotency keys" in two.content[0].text
    assert records(served) == [("Login fails", "k")]


def test_a_task_is_committed_before_its_handle_leaves_and_its_work_runs_once_at_a_poll(tmp_path):
    served = service(tmp_path)

    async def work(client: Any) -> tuple[Any, list[Any], State, State]:
        handle = await make(client, "Login fails")
        before = records(served)
        return handle, before, await get(client, handle.task_id), await get(client, handle.task_id)

    handle, before, polled, again = session(served, work)
    assert isinstance(handle, Handle) and handle.status == "working" and before == []
    # the point came while the task was committed, working, and its handle not yet sent
    assert served.line.frames[0] == ("task", "task-created", handle.task_id, [(1, "working")])
    assert polled.status == again.status == "completed"
    assert CallToolResult.model_validate(polled.result).structured_content == {"number": 1}
    assert records(served) == [("Login fails", None)]


def test_a_call_remade_under_its_key_gets_the_same_task_and_makes_nothing_new(tmp_path):
    served = service(tmp_path)

    async def work(client: Any) -> tuple[Any, Any, Any, State]:
        first = await make(client, "Login fails", key="run:A")
        again = await make(client, "Login fails", key="run:A")
        other = await make(client, "Another title", key="run:A")
        return first, again, other, await get(client, again.task_id)

    first, again, other, polled = session(served, work)
    assert first.task_id == again.task_id and polled.status == "completed"
    assert other.is_error and "422: key 'run:A' was first used for another request" in other.content[0].text
    assert records(served) == [("Login fails", "run:A")]
    assert [frame[:3] for frame in served.line.frames[:3]] == [("task", "task-created", "1"), ("task", None, "1"),
                                                               ("refused", None, None)]


def test_a_task_whose_client_died_still_runs_so_a_client_that_makes_another_makes_the_effect_twice(tmp_path):
    served = service(tmp_path)

    async def work(client: Any) -> list[str]:
        await make(client, "Login fails")  # its handle lost with the process that made it
        second = await make(client, "Login fails")
        statuses = []
        while not statuses or statuses[-1] != "completed":
            statuses.append((await get(client, second.task_id)).status)
        return statuses

    assert session(served, work) == ["working", "completed"]  # the first task ran at the first poll
    assert records(served) == [("Login fails", None), ("Login fails", None)]


def test_a_cancelled_task_never_runs_and_an_unknown_one_is_an_error(tmp_path):
    served = service(tmp_path)

    async def work(client: Any) -> tuple[State, str]:
        handle = await make(client, "Login fails")
        await client.session.send_request(CancelTask(params=TaskParams(task_id=handle.task_id)), Result)
        with pytest.raises(MCPError) as unknown:
            await get(client, "99")
        return await get(client, handle.task_id), str(unknown.value)

    cancelled, unknown = session(served, work)
    assert cancelled.status == "cancelled" and records(served) == []
    assert "no task '99'" in unknown


def test_a_client_that_does_not_declare_tasks_gets_the_result_itself(tmp_path):
    served = service(tmp_path)
    (result,) = session(served, lambda client: asyncio.gather(make(client, "Login fails")), tasks=False)
    assert result.structured_content == {"number": 1} and served.line.frames[0][0] == "request"


@pytest.mark.slow
def test_the_tasks_loop_loses_its_handle_where_only_a_key_saves_it(cli):
    """Swept at depth 1 (`make bench` sweeps it at depth 2): a plain loop duplicates at the task's creation,
    at the work's commit and before its save; saving the handle leaves only the window between the task's
    creation and the handle's arrival; a key closes that too."""
    code, out, _ = cli("sweep", "--loop", f"{LOOP}:plain,handle,keyed", "--effects", EFFECTS, "--depth", "1",
                       "--format", "json")
    assert code == 0
    rows = {row["variant"]: row for row in json.loads(out)}
    assert {name: (row["dups"], row["missing"]) for name, row in rows.items()} == \
        {"plain": (9, 0), "handle": (3, 0), "keyed": (0, 0)}
    assert rows["keyed"]["scenarios"] == rows["keyed"]["points"] == 15  # every point of the keyed loop was a death
    code, out, _ = cli("sweep", "--loop", f"{LOOP}:handle", "--effects", EFFECTS, "--depth", "1", "--list", "dups",
                       "--format", "json")
    assert [s["first_crash"] for s in json.loads(out)] == ["task-created#1", "task-created#2", "task-created#3"]


def test_a_service_file_made_before_tasks_is_the_services_and_gains_their_table(tmp_path):
    from crashlab.service.store import BEFORE_TASKS

    path = tmp_path / "service.sqlite"
    older = sqlite3.connect(path)
    older.executescript(BEFORE_TASKS + "INSERT INTO records (kind, number, body) VALUES ('issue', 1, 'kept');")
    older.close()
    served = service(tmp_path)
    assert [r.number for r in served.store.records()] == [1]
    assert session(served, lambda client: make(client, "Login fails")).task_id == "1"
