"""The job as a LlamaIndex `FunctionAgent` (`crashlab[llamaindex]`), for a sweep that kills it for real.

The agent is what a LlamaIndex user writes: a `FunctionAgent` (an `AgentWorkflow`, itself a
`Workflow` of steps) with a function-calling LLM and the job's tools. Durability is what LlamaIndex
documents for it ("Writing durable workflows"): there is no built-in checkpointer, so the run's
stream is read with ``stream_events(expose_internal=True)`` and the context is saved with
``ctx.to_dict()`` each time a step finishes (`StepStateChanged`, `StepState.NOT_RUNNING`); a
restart rebuilds it with ``Context.from_dict`` and continues with ``run(ctx=...)``. The saves go to
a SQLite database in the run directory. The context is serialised with `JsonPickleSerializer`,
which LlamaIndex names for contexts holding objects JSON cannot (the agent's chat memory).

The model is scripted through LlamaIndex's own interface (a `FunctionCallingLLM` whose reply is the
job's turn k when the conversation holds k assistant messages, the job's call IDs as tool IDs, and
``$A`` resolved from A's tool message), so it runs offline and repeats itself. The tools talk to
crashlab's service over plain HTTP (`crashlab.runtimes.http`); the keyed row sends a key made of
LlamaIndex's own IDs, the run ID and the tool call's ``tool_id``.

`AgentWorkflow`'s tool step runs with ``num_workers=4`` (the `@step` default): a reply's calls run
at once, each sync tool on an executor thread. The agent here overrides that one step with
``@step(num_workers=1)`` so they run one at a time, and its tools are ``async`` functions whose
request holds the event loop, so a save never runs while a request is in flight: the runs repeat
themselves, which the sweep requires.

Crash points, besides the service's own ``accepted``: before and after the model's reply, and
before and after each save of the context (``save``, ``save-done``). Only this module imports
LlamaIndex.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import warnings
from collections.abc import AsyncGenerator, Generator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent, ToolCall, ToolCallResult
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection
from llama_index.core.tools import BaseTool
from llama_index.core.utils import get_tokenizer
from llama_index.core.workflow import Context, JsonPickleSerializer, JsonSerializer
from pydantic import PrivateAttr
from workflows import step
from workflows.context.state_store import UnserializableKeyWarning
from workflows.events import StepState, StepStateChanged

import crashlab
from crashlab.job import Job
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.script import resolved

#: The run ID the agent is started and resumed under: LlamaIndex's durable name for the run.
RUN_ID = "triage-run"

#: The tool call the tool step is running now (its ``tool_id``), for a keyed tool: LlamaIndex hands a
#: tool only its arguments.
_tool_id: ContextVar[str] = ContextVar("tool_id")


class ScriptedLLM(FunctionCallingLLM):
    """The job's replies, in order: reply k when the conversation already holds k assistant messages."""

    _job: Job = PrivateAttr()

    def __init__(self, job: Job) -> None:
        super().__init__()
        self._job = job

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_function_calling_model=True, model_name="crashlab-scripted")

    def _prepare_chat_with_tools(self, tools: Sequence[BaseTool], user_msg: str | ChatMessage | None = None,
                                 chat_history: list[ChatMessage] | None = None, verbose: bool = False,
                                 allow_parallel_tool_calls: bool = False, tool_required: bool = False,
                                 **kwargs: Any) -> dict[str, Any]:
        return {"messages": list(chat_history or [])}

    def get_tool_calls_from_response(self, response: ChatResponse, error_on_no_tool_call: bool = True,
                                     **kwargs: Any) -> list[ToolSelection]:
        return [ToolSelection(tool_id=c["id"], tool_name=c["name"], tool_kwargs=c["args"])
                for c in response.message.additional_kwargs.get("tool_calls", [])]

    def _reply(self, messages: Sequence[ChatMessage]) -> ChatResponse:
        crashlab.point("model-asked")
        k = sum(m.role == MessageRole.ASSISTANT for m in messages)
        turn = self._job.turns[k]
        if turn.is_final:
            reply = ChatMessage(role=MessageRole.ASSISTANT, content=turn.answer)
        else:
            results = {str(m.additional_kwargs.get("tool_call_id")): m.content
                       for m in messages if m.role == MessageRole.TOOL}
            calls = [{"id": c.id, "name": c.tool, "args": resolved(c.args, results)} for c in turn.calls]
            reply = ChatMessage(role=MessageRole.ASSISTANT, content="", additional_kwargs={"tool_calls": calls})
        crashlab.point("model-replied")
        return ChatResponse(message=reply)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._reply(messages)

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._reply(messages)

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Generator[ChatResponse, None, None]:
        yield self._reply(messages)

    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> AsyncGenerator[ChatResponse, None]:
        reply = self._reply(messages)

        async def replies() -> AsyncGenerator[ChatResponse, None]:
            yield reply
        return replies()

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError("the agent only chats")

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError("the agent only chats")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError("the agent only chats")

    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError("the agent only chats")



class TriageAgent(FunctionAgent):
    """A `FunctionAgent` whose tool step runs one call at a time and tells the tool which call it runs."""

    @step(num_workers=1)  # AgentWorkflow's default (4) runs a reply's calls at once
    async def call_tool(self, ctx: Context, ev: ToolCall) -> ToolCallResult:
        token = _tool_id.set(ev.tool_id)
        try:
            return await super().call_tool(ctx, ev)
        finally:
            _tool_id.reset(token)


def tools(keyed: bool) -> list:
    """The job's tools, over HTTP; keyed, each changing request carries the run ID and the tool ID."""

    def key() -> str | None:
        return f"{RUN_ID}:{_tool_id.get()}" if keyed else None

    async def create_issue(title: str, body: str) -> int:
        """File an issue; its number."""
        return http.create_issue(title, body, key=key())

    async def comment(issue: int, body: str) -> int:
        """Comment on an issue; the comment's number."""
        return http.comment(issue, body, key=key())

    async def search(query: str) -> list[int]:
        """The issues that mention `query`."""
        return http.search(query)

    return [create_issue, comment, search]


class Snapshots:
    """The run's saved contexts, one row per run ID in a SQLite file: the ``db.save`` of LlamaIndex's docs."""

    def __init__(self, path: Path) -> None:
        self.connection = sqlite3.connect(path)
        self.connection.execute("CREATE TABLE IF NOT EXISTS snapshots (run_id TEXT PRIMARY KEY, ctx TEXT)")

    def load(self, run_id: str) -> dict[str, Any] | None:
        row = self.connection.execute("SELECT ctx FROM snapshots WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def save(self, run_id: str, ctx: dict[str, Any]) -> None:
        crashlab.point("save")
        with self.connection:
            self.connection.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?)", (run_id, json.dumps(ctx)))
        crashlab.point("save-done")

    def close(self) -> None:
        self.connection.close()


@dataclass(frozen=True)
class Setting:
    """One row: the tools plain or keyed, and the serializer of the saved context."""

    keyed: bool = False
    pickle: bool = True  # JsonPickleSerializer; False: ctx.to_dict()'s default, JsonSerializer


#: The rows: the agent as a user writes it, the same with keys from LlamaIndex's own IDs, and the
#: context saved with ``to_dict()``'s default serializer, which skips what JSON cannot hold.
SETTINGS = {
    "llamaindex-plain": Setting(),
    "llamaindex-keyed": Setting(keyed=True),
    "llamaindex-json": Setting(pickle=False),
}


async def agent_run(job: Job, setting: Setting, snapshots: Snapshots) -> None:
    """Start the run, or continue it from its last saved context; save the context each time a step finishes."""
    agent = TriageAgent(llm=ScriptedLLM(job), tools=tools(setting.keyed))
    serializer = JsonPickleSerializer() if setting.pickle else JsonSerializer()
    saved = snapshots.load(RUN_ID)
    if saved is None:
        handler = agent.run(user_msg=job.description or job.name, run_id=RUN_ID)
    elif not saved["is_running"]:
        return  # the saved context is the finished run's
    else:
        handler = agent.run(ctx=Context.from_dict(agent, saved, serializer=serializer), run_id=RUN_ID)
    async for event in handler.stream_events(expose_internal=True):
        if isinstance(event, StepStateChanged) and event.step_state == StepState.NOT_RUNNING:
            snapshots.save(RUN_ID, handler.ctx.to_dict(serializer=serializer))
    await handler


def entry(slug: str, run: Run) -> None:
    """One process of the agent: start the run, or resume it from its saved context."""
    setting = SETTINGS[slug]
    assert run.directory is not None, "LlamaIndex runs only forked, in a run directory"
    # The saved memory's tokenizer is tiktoken's, which unpickling loads by name, from the network
    # unless loaded already: LlamaIndex's own loader reads the copy it ships, and keeps it loaded.
    get_tokenizer()
    # JSON-only, LlamaIndex warns in each process that it leaves the memory out; the stuck restart tells it.
    warnings.filterwarnings("ignore", category=UnserializableKeyWarning)
    snapshots = Snapshots(run.directory / "snapshots.sqlite")
    try:
        asyncio.run(agent_run(run.job, setting, snapshots))
    finally:
        snapshots.close()
