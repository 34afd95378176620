"""The job as a LangGraph ReAct agent (`crashlab[langgraph]`), for a sweep that kills it for real.

The agent is what a LangGraph user writes: `create_react_agent` with a chat model, the job's tools,
and a file-backed `SqliteSaver`. The model is scripted (a `BaseChatModel` whose reply is the job's
turn k when the conversation holds k model messages, with the job's call IDs as tool-call IDs, and
``$A`` resolved from A's tool message), so it runs offline and repeats itself. The tools talk to
crashlab's service over plain HTTP (`crashlab.runtimes.http`), which recognises the job's effects by
what they are; the keyed variant sends a key made of LangGraph's own durable IDs, the thread ID and
the tool-call ID.

Crash points, besides the service's own ``accepted``: before and after the model's reply, and
before and after each checkpoint write (``put``, ``put_writes``). A raised exception is not a
death here (checkpoint writes can run on a background executor, and a parallel tool's error is
saved as a result), so these points only mean anything under a real SIGKILL. The graph runs with
``durability="sync"`` and ``max_concurrency=1``, which makes it repeat itself from run to run; the
``parallel`` row leaves LangGraph's default (a reply's calls at once, on a thread pool), and the
harness schedules its threads so that it repeats itself too (`crashlab.protocols.schedule`).

Only this module imports LangGraph.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent

import crashlab
from crashlab.job import Job
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.script import resolved

THREAD = "triage-thread"


class ScriptedModel(BaseChatModel):
    """The job's replies, in order: reply k when the conversation already holds k model messages."""

    job: Job

    @property
    def _llm_type(self) -> str:
        return "crashlab-scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        crashlab.point("model-asked")
        k = sum(isinstance(m, AIMessage) for m in messages)
        turn = self.job.turns[k]
        if turn.is_final:
            reply = AIMessage(content=turn.answer)
        else:
            results = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}
            calls = [{"id": c.id, "name": c.tool, "args": resolved(c.args, results)} for c in turn.calls]
            reply = AIMessage(content="", tool_calls=calls)
        crashlab.point("model-replied")
        return ChatResult(generations=[ChatGeneration(message=reply)])



class KilledSaver(SqliteSaver):
    """LangGraph's SQLite checkpointer, with a crash point on each side of every write."""

    def put(self, *args: Any, **kwargs: Any) -> Any:
        crashlab.point("put")
        saved = super().put(*args, **kwargs)
        crashlab.point("put-done")
        return saved

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        crashlab.point("put-writes")
        super().put_writes(*args, **kwargs)
        crashlab.point("put-writes-done")


def tools(keyed: bool) -> list:
    """The job's tools, over HTTP; keyed, each changing request carries thread and tool-call ID."""

    def key(call_id: str) -> str | None:
        return f"{THREAD}:{call_id}" if keyed else None

    @tool
    def create_issue(title: str, body: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> int:
        """File an issue; its number."""
        return http.create_issue(title, body, key=key(tool_call_id))

    @tool
    def comment(issue: int, body: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> int:
        """Comment on an issue; the comment's number."""
        return http.comment(issue, body, key=key(tool_call_id))

    @tool
    def search(query: str) -> list[int]:
        """The issues that mention `query`."""
        return http.search(query)

    return [create_issue, comment, search]


@dataclass(frozen=True)
class Setting:
    """One row: the tools plain or keyed, the tool node's version, and when LangGraph saves."""

    keyed: bool = False
    version: Literal["v1", "v2"] = "v2"  # "v2": each tool call its own task and write; "v1": one task for the calls
    durability: Literal["sync", "exit"] = "sync"  # "sync": save before the next step; "exit": when the graph returns
    #: One task at a time (``max_concurrency=1``), or LangGraph's default: a reply's calls on a thread pool,
    #: at once, which the harness schedules (`crashlab.protocols.schedule`).
    parallel: bool = False
    #: The agent as a subgraph: a node of a parent graph, saved by the parent's checkpointer under the
    #: subgraph's namespace (LangGraph #6792: resuming a subgraph re-ran the tasks before an interrupt).
    subgraph: bool = False


#: The rows (`crashlab.loops.LANGGRAPH` names them): the agent as a user writes it (LangGraph's
#: defaults but a synchronous save), the same with keys from LangGraph's own IDs, and the settings
#: that change the outcome.
SETTINGS = {
    "langgraph-plain": Setting(),
    "langgraph-keyed": Setting(keyed=True),
    "langgraph-v1": Setting(version="v1"),
    "langgraph-exit": Setting(durability="exit"),
    "langgraph-parallel": Setting(parallel=True),
    "langgraph-subgraph": Setting(subgraph=True),
}


def entry(slug: str, run: Run) -> None:
    """One process of the agent: start the thread, or resume it from its checkpoint (``invoke(None)``)."""
    setting, job = SETTINGS[slug], run.job
    assert run.directory is not None, "LangGraph runs only forked, in a run directory"
    connection = sqlite3.connect(run.directory / "graph.sqlite", check_same_thread=False)
    try:
        saver = KilledSaver(connection)
        graph = create_react_agent(ScriptedModel(job=job), tools(setting.keyed), version=setting.version,
                                   checkpointer=None if setting.subgraph else saver)
        if setting.subgraph:
            graph = StateGraph(MessagesState).add_node("agent", graph).add_edge(START, "agent").compile(
                checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": THREAD}}
        if not setting.parallel:
            config["max_concurrency"] = 1
        started = graph.get_state(config).values
        graph.invoke(None if started else {"messages": [("user", job.description or job.name)]}, config,
                     durability=setting.durability)
    finally:
        connection.close()
