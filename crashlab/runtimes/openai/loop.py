"""The job as an OpenAI Agents SDK agent (`crashlab[openai]`), for a sweep that kills it for real.

The agent is what an Agents SDK user writes: an `Agent` with the job's function tools, driven by
`Runner.run_sync`, its conversation in a file-backed `SQLiteSession` (the SDK's memory across
runs). The model is scripted through the SDK's own `Model` interface (reply k when the
conversation holds the calls of k replies, with the job's call IDs as the calls' ``call_id``, and
``$A`` resolved from A's ``function_call_output``), so it runs offline with tracing off and no key.
The tools talk to crashlab's service over plain HTTP (`crashlab.runtimes.http`); the keyed
variant sends a key made of the SDK's own durable IDs, the session ID and the tool-call ID
(`ToolContext.tool_call_id`).

A restart is how a session's user continues a conversation: the SDK keeps no run state on disk
for a run that was killed (`RunState` exists only for a run that paused for approval), so the new
process finds the session's items and runs again with no new input, and the model reads the
stored conversation. The runner writes a turn's model reply and its tool outputs in one
`add_items` after the reply's tools ran, so a kill between a tool's effect and that write leaves
no trace of the reply: the model is asked again, and the tool runs again.

The approve variant is the SDK's human-in-the-loop flow, the one place it keeps a run's state for
another process: the changing tools need approval, and at each pause the process writes
`RunState.to_string()` to a file, approves, and resumes from that state, as the HITL guide's
example does; a restart that finds the file resumes from it. The pause writes the reply's
``function_call`` items to the session and the resumed turn writes their outputs, so a kill
between a tool's effect and that write leaves the session with calls that have no output (the
durable state of openai-agents issue #4615); the stored state predates the tool's run, so the
restart runs it again, and goes on resuming from that state until the next pause replaces it.

Crash points, besides the service's own ``accepted``: before and after the model's reply, before
and after each session write (``add-items``, ``add-items-done``), and, under approve, around the
write of the paused run's state (``state-save``, ``state-saved``). The SDK starts a reply's
function tools together, each sync tool in a worker thread (`asyncio.to_thread`): the parallel
row keeps that default, and the harness schedules those threads (`crashlab.protocols.schedule`); the
others set ``ToolExecutionConfig(max_function_tool_concurrency=1)``, which runs them one at a time.

Only this module imports the Agents SDK.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    ModelResponse,
    ModelSettings,
    RunConfig,
    Runner,
    RunState,
    SQLiteSession,
    ToolExecutionConfig,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.items import TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import crashlab
from crashlab.job import Job
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.script import resolved

SESSION = "triage-session"


class ScriptedModel(Model):
    """The job's replies, in order: reply k when the conversation holds the calls of k replies."""

    def __init__(self, job: Job) -> None:
        self.job = job

    async def get_response(self, system_instructions: str | None, input: str | list[TResponseInputItem],
                           model_settings: ModelSettings, tools: list, output_schema: Any, handoffs: list,
                           tracing: Any, **kwargs: Any) -> ModelResponse:
        crashlab.point("model-asked")
        items: list[Any] = [] if isinstance(input, str) else list(input)
        called = {item["call_id"] for item in items if item.get("type") == "function_call"}
        results = {item["call_id"]: item["output"] for item in items if item.get("type") == "function_call_output"}
        k = sum(1 for turn in self.job.turns if not turn.is_final and turn.calls[0].id in called)
        turn = self.job.turns[k]
        output: list[TResponseOutputItem]
        if turn.is_final:
            output = [ResponseOutputMessage(id=f"msg-{k}", type="message", role="assistant", status="completed",
                                            content=[ResponseOutputText(text=turn.answer or "", type="output_text",
                                                                        annotations=[])])]
        else:
            output = [ResponseFunctionToolCall(id=f"fc-{c.id}", call_id=c.id, name=c.tool, type="function_call",
                                               arguments=json.dumps(resolved(c.args, results)), status="completed")
                      for c in turn.calls]
        crashlab.point("model-replied")
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the job runs with Runner.run_sync, which does not stream")



class KilledSession(SQLiteSession):
    """The SDK's SQLite session, with a crash point on each side of every write."""

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        crashlab.point("add-items")
        await super().add_items(items)
        crashlab.point("add-items-done")


def tools(keyed: bool, approve: bool = False) -> list[FunctionTool]:
    """The job's tools, over HTTP; keyed, each changing request carries the session and tool-call ID;
    under `approve`, each changing tool waits for a person's approval (``needs_approval=True``)."""

    def key(ctx: ToolContext[Any]) -> str | None:
        return f"{SESSION}:{ctx.tool_call_id}" if keyed else None

    @function_tool(needs_approval=approve)
    def create_issue(ctx: ToolContext[Any], title: str, body: str) -> int:
        """File an issue; its number."""
        return http.create_issue(title, body, key=key(ctx))

    @function_tool(needs_approval=approve)
    def comment(ctx: ToolContext[Any], issue: int, body: str) -> int:
        """Comment on an issue; the comment's number."""
        return http.comment(issue, body, key=key(ctx))

    @function_tool
    def search(query: str) -> list[int]:
        """The issues that mention `query`."""
        return http.search(query)

    return [create_issue, comment, search]


@dataclass(frozen=True)
class Setting:
    """One row: the tools plain or keyed, and whether changing tools wait for approval."""

    keyed: bool = False
    approve: bool = False  # True: needs_approval=True, the paused run's RunState saved to a file, as the HITL guide
    parallel: bool = False  # True: the SDK's default, a reply's tools at once; else max_function_tool_concurrency=1


#: The rows (`RUNTIME.rows` names them): the agent as a user writes it, the same with keys made of
#: the SDK's own IDs, and the human-in-the-loop flow, whose `RunState` is the SDK's one durable run state.
SETTINGS = {
    "openai-plain": Setting(),
    "openai-keyed": Setting(keyed=True),
    "openai-approve": Setting(approve=True),
    "openai-parallel": Setting(parallel=True),
}


def entry(slug: str, run: Run) -> None:
    """One process of the agent: resume the stored paused run, continue the session's conversation
    (input ``[]``), or start it; then approve every pause, as the human-in-the-loop guide's loop does."""
    setting, job = SETTINGS[slug], run.job
    assert run.directory is not None, "the Agents SDK runs only forked, in a run directory"
    set_tracing_disabled(True)
    paused = run.directory / "run-state.json"  # the HITL guide's STATE_PATH
    session = KilledSession(SESSION, run.directory / "session.sqlite")
    try:
        agent = Agent(name="triage", instructions="Triage the reports.", model=ScriptedModel(job),
                      tools=list(tools(setting.keyed, setting.approve)))
        config = RunConfig(tracing_disabled=True) if setting.parallel else \
            RunConfig(tracing_disabled=True, tool_execution=ToolExecutionConfig(max_function_tool_concurrency=1))
        turns = len(job.turns) + 1

        def approved(state: RunState[Any]) -> Any:
            """Approve every pending call (the person says yes) and resume the paused run on the session."""
            for interruption in state.get_interruptions():
                state.approve(interruption)
            return Runner.run_sync(agent, state, session=session, run_config=config, max_turns=turns)

        if paused.exists():
            result = approved(asyncio.run(RunState.from_string(agent, paused.read_text())))
        else:
            started = asyncio.run(session.get_items(limit=1))
            result = Runner.run_sync(agent, [] if started else job.description or job.name, session=session,
                                     run_config=config, max_turns=turns)
        while result.interruptions:
            state = result.to_state()
            crashlab.point("state-save")
            paused.write_text(state.to_string())
            crashlab.point("state-saved")
            result = approved(state)
    finally:
        session.close()
