"""The job as a Pydantic AI agent (`crashlab[pydanticai]`), for a sweep that kills it for real.

The agent is what a Pydantic AI user writes: an `Agent` with the job's tools and a model. The model
is Pydantic AI's own `FunctionModel`, scripted: reply k when the conversation holds k model
responses, the job's call IDs as tool-call IDs, ``$A`` resolved from A's tool return, so it runs
offline and repeats itself. The tools call crashlab's service over plain HTTP
(`crashlab.runtimes.http`).

Two ways to keep the run, both in the run's directory:

- plain: what Pydantic AI's persistence page tells a user who stores a conversation: the run's
  `result.conversation`, dumped with `ConversationTypeAdapter` when the run returns. That is all
  the agent keeps; the same page sends a run that must survive a crash partway to durable
  execution. A restart that finds no stored conversation starts the job over.
- dbos: the `DBOSDurability` capability (``DBOSAgent``'s replacement; the wrapper is deprecated in
  2.x), `agent.run()` inside a `@DBOS.workflow`, on a SQLite system database. DBOS makes each model
  request a step; the tools are `@DBOS.step`s, as the DBOS page tells a user whose tools do I/O
  (``inline`` leaves them undecorated, which the page allows when "durability isn't needed"). A
  restart launches DBOS, which recovers the pending workflow from its recorded steps.

Crash points, besides the service's own ``accepted``: ``model-asked`` and ``model-replied`` in the
model; ``record`` and ``recorded`` on each side of DBOS's write of a step's output (its SQLite
system database's `record_operation_result`: the model's and the tools'); ``save`` and ``saved``
on each side of the plain agent's write of its conversation; the approval desk's own when a job
gates a call (``approval-asked``, ``approval-decided``). Tool calls run one at a time
(Pydantic AI runs a reply's calls in parallel by default): ``sequential`` in both ways.

A gated call waits for the person as Pydantic AI's deferred-tools page writes it: an
`ApprovalRequiredToolset` defers it, a `HandleDeferredToolCalls` handler resolves it inside the run
with a plain bool. Under DBOS that handler runs in workflow code, not in a step: DBOS records no
decision, and a recovery runs the handler again, which asks the desk again by the same key (workflow
and tool-call ID): only a desk that remembers by key spares the person a second question.

Only this module imports Pydantic AI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dbos._sys_db_sqlite
from dbos import DBOS, SetWorkflowID
from dbos._sys_db_sqlite import SQLiteSystemDatabase
from pydantic_ai import Agent, ConversationTypeAdapter, DeferredToolRequests, DeferredToolResults, RunContext
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

import crashlab
from crashlab.job import Job
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.dbos.launch import launch, warm_engine
from crashlab.runtimes.script import resolved
from crashlab.world.person import ApprovalDesk

NAME = "triage"  # the agent's name: DBOS names its steps by it
WORKFLOW = "triage-workflow"


def scripted(job: Job) -> FunctionModel:
    """The job's replies, in order, as Pydantic AI's `FunctionModel`."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        crashlab.point("model-asked")
        k = sum(isinstance(m, ModelResponse) for m in messages)
        turn = job.turns[k]
        if turn.is_final:
            response = ModelResponse(parts=[TextPart(turn.answer or "")])
        else:
            results = {part.tool_call_id: part.content for m in messages if not isinstance(m, ModelResponse)
                       for part in m.parts if isinstance(part, ToolReturnPart)}
            response = ModelResponse(parts=[ToolCallPart(c.tool, resolved(c.args, results), tool_call_id=c.id)
                                            for c in turn.calls])
        crashlab.point("model-replied")
        return response

    return FunctionModel(reply, model_name="crashlab-scripted")



def key(keyed: bool) -> str | None:
    """Keyed: DBOS's own durable IDs of the step the tool runs in, the workflow ID and the step ID."""
    return f"{DBOS.workflow_id}:{DBOS.step_id}" if keyed else None


def tools(job: Job, keyed: bool, step: bool) -> AbstractToolset[None]:
    """The job's tools, over HTTP; each a `@DBOS.step` when `step`, as the DBOS page asks of tools doing I/O.

    The calls the job gates wait for a person's approval: Pydantic AI's `ApprovalRequiredToolset`, whose
    function picks the gated calls by tool-call ID (the job's call IDs)."""

    async def create_issue(title: str, body: str) -> int:
        """File an issue; its number."""
        return http.create_issue(title, body, key=key(keyed))

    async def comment(issue: int, body: str) -> int:
        """Comment on an issue; the comment's number."""
        return http.comment(issue, body, key=key(keyed))

    async def search(query: str) -> list[int]:
        """The issues that mention `query`."""
        return http.search(query)

    found: list[Callable[..., Any]] = [create_issue, comment, search]
    toolset: FunctionToolset[None] = FunctionToolset([DBOS.step()(f) for f in found] if step else found)
    gated = {call.id for call in job.calls if call.needs_approval}
    if not gated:
        return toolset

    def gate(ctx: RunContext[None], tool: ToolDefinition, args: dict[str, Any]) -> bool:
        return ctx.tool_call_id in gated

    return toolset.approval_required(gate)


def approvals(job: Job, desk: ApprovalDesk) -> HandleDeferredToolCalls[None]:
    """The person's decisions, asked at crashlab's approval desk by the run's durable IDs, as a Pydantic AI
    handler resolves approvals inside the run; its decision reaches the tool as a plain bool."""
    calls = {call.id: call for call in job.calls}

    async def ask(ctx: RunContext[None], requests: DeferredToolRequests) -> DeferredToolResults:
        decided = {c.tool_call_id: desk.approve(calls[c.tool_call_id], f"{WORKFLOW}:{c.tool_call_id}")
                   for c in requests.approvals}
        return requests.build_results(approvals=decided)

    return HandleDeferredToolCalls(handler=ask)


class KilledSystemDatabase(SQLiteSystemDatabase):
    """DBOS's SQLite system database, with a crash point on each side of every step's recorded output."""

    def record_operation_result(self, *args: Any, **kwargs: Any) -> None:
        crashlab.point("record")
        super().record_operation_result(*args, **kwargs)
        crashlab.point("recorded")


@dataclass(frozen=True)
class Setting:
    """One row: how the run is kept, and what the tools send."""

    durable: bool = False  # False: the conversation stored when the run returns; True: a DBOS workflow
    keyed: bool = False  # a key of DBOS's workflow and step IDs
    step: bool = True  # with DBOS: each tool a `@DBOS.step`; False: run in workflow code, not recorded


#: The rows (named in `crashlab.runtimes.pydanticai`): the agent as a user stores its conversation, the
#: same agent made durable with DBOS, that with keys from DBOS's own IDs, and with its tools left inline.
SETTINGS = {
    "pydanticai-plain": Setting(),
    "pydanticai-dbos": Setting(durable=True),
    "pydanticai-keyed": Setting(durable=True, keyed=True),
    "pydanticai-inline": Setting(durable=True, step=False),
}


#: Run by the harness before it forks a process of this loop (`Adapter.load`).
warm = warm_engine


def entry(slug: str, run: Run) -> None:
    """One process of the agent: the plain agent from its stored conversation, or the durable one under DBOS."""
    setting = SETTINGS[slug]
    assert run.directory is not None, "Pydantic AI runs only forked, in a run directory"
    if setting.durable:
        durable(setting, run.job, run.directory, run.world.desk)
    else:
        plain(run.job, run.directory, run.world.desk)


def plain(job: Job, directory: Path, desk: ApprovalDesk) -> None:
    """Run the job unless its conversation is stored; store it when the run returns (there is nothing before)."""
    stored = directory / "conversation.json"
    if stored.exists():
        return  # the run returned and its conversation is kept: the job is done
    agent = Agent(scripted(job), name=NAME, toolsets=[tools(job, keyed=False, step=False)],
                  capabilities=[approvals(job, desk)])
    with Agent.parallel_tool_call_execution_mode("sequential"):
        result = agent.run_sync(job.description or job.name)
    crashlab.point("save")
    stored.write_bytes(ConversationTypeAdapter.dump_json(result.conversation))
    crashlab.point("saved")


#: What the process's workflow works with: set by `durable` before DBOS launches.
_now: dict[str, Any] = {}


@DBOS.workflow(name="triage")
async def job_workflow(prompt: str) -> str:
    result = await _now["agent"].run(prompt)
    return str(result.output)


async def start(prompt: str) -> None:
    """The first process: run the workflow under the ID a restart finds it by, as the DBOS page awaits it."""
    with SetWorkflowID(WORKFLOW):
        await job_workflow(prompt)


def durable(setting: Setting, job: Job, directory: Path, desk: ApprovalDesk) -> None:
    """Launch DBOS over the run's database; start the workflow, or wait for DBOS's recovery of it."""
    # DBOS builds its system database by class; crash points go on the SQLite one's step records.
    dbos._sys_db_sqlite.SQLiteSystemDatabase = KilledSystemDatabase  # type: ignore[misc]
    _now["agent"] = Agent(scripted(job), name=NAME, toolsets=[tools(job, setting.keyed, setting.step)],
                          capabilities=[approvals(job, desk), DBOSDurability(parallel_execution_mode="sequential")])
    launch(directory / "dbos.sqlite")
    if DBOS.get_workflow_status(WORKFLOW) is None:
        asyncio.run(start(job.description or job.name))
    else:
        DBOS.retrieve_workflow(WORKFLOW).get_result(polling_interval_sec=0.01)
