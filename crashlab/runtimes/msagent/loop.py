"""The job as a Microsoft Agent Framework workflow (`crashlab[msagent]`), for a sweep that kills it for real.

What an Agent Framework user writes for a durable agent: a `Workflow` built with `WorkflowBuilder`
whose start executor is the `Agent` (the framework wraps it in an `AgentExecutor`), checkpointing to a
`FileCheckpointStorage` in the run's directory; a restart resumes from the latest checkpoint,
``workflow.run(checkpoint_id=...)``. The agent's chat client is scripted (a `BaseChatClient` with the
framework's `FunctionInvocationLayer`, whose reply is the job's turn k when the conversation holds k
assistant messages, with the job's call IDs as the `function_call` contents' call IDs, and ``$A``
resolved from A's `function_result`), so it runs offline and repeats itself. The tools call
crashlab's service over plain HTTP (`crashlab.runtimes.http`); the keyed variant sends a key made of
the framework's own durable IDs: the agent session's ID (saved in every checkpoint, restored with it)
and the call ID.

The workflow saves a checkpoint at each superstep boundary only, and the agent's whole tool loop
(every model call and every tool call of the job) runs inside one superstep: the agent executor's
one handler call. So nothing of the loop is saved until the agent has answered. Tools declared with
``approval_mode="always_require"`` end the superstep at each reply: the workflow pauses on the
approval requests (a checkpoint), the person's answers are delivered with ``workflow.run(responses=...)``
(another checkpoint, before the approved calls run), and the person is asked through crashlab's
service, which counts each question.

A reply's calls run one at a time (``allow_concurrent_invocation=False``), but in the parallel row:
the framework's default runs them at once, a synchronous tool on a worker thread
(``asyncio.to_thread``) each, in an order that differs from run to run unless the harness schedules
those threads, as it does for that row (`crashlab.protocols.schedule`).

Crash points, besides the service's own ``accepted``: before and after the model's reply
(``model-asked``, ``model-replied``), after the person's answer (``approved``), and on each side of
every checkpoint write (``save``, ``save-done``). Only this module imports the Agent Framework.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent_framework import (
    Agent,
    AgentExecutor,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    Content,
    FileCheckpointStorage,
    FunctionInvocationContext,
    FunctionInvocationLayer,
    FunctionMiddleware,
    Message,
    WorkflowBuilder,
    WorkflowCheckpoint,
    tool,
)

import crashlab
from crashlab.job import Job
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.script import resolved

WORKFLOW = "triage-workflow"
ApprovalMode = Literal["always_require", "never_require"]
KEY = "crashlab-idempotency-key"


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """The job's replies, in order: reply k when the conversation already holds k assistant messages."""

    def __init__(self, job: Job, concurrent: bool) -> None:
        super().__init__(function_invocation_configuration={"allow_concurrent_invocation": concurrent})
        self.job = job

    async def _reply(self, messages: Sequence[Message]) -> ChatResponse:
        crashlab.point("model-asked")
        k = sum(m.role == "assistant" for m in messages)
        turn = self.job.turns[k]
        if turn.is_final:
            reply = Message(role="assistant", contents=[Content.from_text(turn.answer or "")])
        else:
            results = {str(c.call_id): c.result for m in messages for c in m.contents if c.type == "function_result"}
            reply = Message(role="assistant", contents=[
                Content.from_function_call(call_id=c.id, name=c.tool, arguments=resolved(c.args, results))
                for c in turn.calls])
        crashlab.point("model-replied")
        return ChatResponse(messages=[reply], response_id=f"reply-{k}")

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any],
                            **kwargs: Any) -> Any:
        assert not stream, "the workflow runs the agent without streaming"
        return self._reply(messages)



class KilledStorage(FileCheckpointStorage):
    """The framework's file checkpoint storage, with a crash point on each side of every save."""

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        crashlab.point("save")
        saved = await super().save(checkpoint)
        crashlab.point("save-done")
        return saved


class Keying(FunctionMiddleware):
    """The key of the call about to run: the agent session's ID and the call ID, which the framework hands
    function middleware (`metadata["call_id"]`) and not a tool called directly."""

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        assert context.session is not None
        context.metadata[KEY] = f"{context.session.session_id}:{context.metadata['call_id']}"
        await call_next()


def tools(approval: ApprovalMode) -> list[Any]:
    """The job's tools, over HTTP; each changing request carries the key `Keying` made, if it ran. The changing
    ones wait for a person's approval when `approval` is ``"always_require"``."""

    def key(ctx: FunctionInvocationContext) -> str | None:
        return ctx.metadata.get(KEY)

    @tool(approval_mode=approval)
    def create_issue(title: str, body: str, ctx: FunctionInvocationContext) -> int:
        """File an issue; its number."""
        return http.create_issue(title, body, key=key(ctx))

    @tool(approval_mode=approval)
    def comment(issue: int, body: str, ctx: FunctionInvocationContext) -> int:
        """Comment on an issue; the comment's number."""
        return http.comment(issue, body, key=key(ctx))

    @tool
    def search(query: str) -> list[int]:
        """The issues that mention `query`."""
        return http.search(query)

    return [create_issue, comment, search]


@dataclass(frozen=True)
class Setting:
    """One row: the tools plain or keyed, whether a reply's calls run concurrently, and whether they need approval."""

    keyed: bool = False
    concurrent: bool = False  # allow_concurrent_invocation; the framework's default is True
    approval: ApprovalMode = "never_require"  # the changing tools' approval_mode; "never_require" is the default
    named: bool = False  # the agent's session named by the caller (the job's run ID), not generated


SETTINGS = {
    "msagent-plain": Setting(),
    "msagent-keyed": Setting(keyed=True),
    "msagent-approval": Setting(approval="always_require"),
    "msagent-named": Setting(keyed=True, named=True),
    "msagent-parallel": Setting(concurrent=True),
}


async def agent(slug: str, run: Run) -> None:
    """One process of the workflow: start it, or resume it from its latest checkpoint."""
    setting, job = SETTINGS[slug], run.job
    assert run.directory is not None
    storage = KilledStorage(run.directory / "checkpoints")
    chat = Agent(ScriptedClient(job, setting.concurrent), name="triage", tools=tools(setting.approval),
                 middleware=[Keying()] if setting.keyed else None)
    session = AgentSession(session_id=job.run) if setting.named else None
    workflow = WorkflowBuilder(name=WORKFLOW, start_executor=AgentExecutor(chat, session=session),
                               checkpoint_storage=storage).build()
    latest = await storage.get_latest(workflow_name=WORKFLOW)
    if latest is None:
        result = await workflow.run(job.description or job.name)
    else:
        result = await workflow.run(checkpoint_id=latest.checkpoint_id)
    while requests := result.get_request_info_events():
        result = await workflow.run(responses={r.request_id: approve(r.data) for r in requests})


def approve(request: Content) -> Content:
    """The person's answer to an approval request the workflow paused on, asked through crashlab's service (which
    counts each time a person is asked)."""
    call = request.function_call
    assert call is not None and call.call_id is not None
    approved = http.approve(f"{call.name} {call.call_id}")
    crashlab.point("approved")
    return request.to_function_approval_response(approved=approved)


def entry(slug: str, run: Run) -> None:
    """One process: the workflow on a fresh event loop (the framework logs every warning of a dying run, which
    would bury a sweep's output)."""
    logging.getLogger("agent_framework").setLevel(logging.CRITICAL)
    asyncio.run(agent(slug, run))
