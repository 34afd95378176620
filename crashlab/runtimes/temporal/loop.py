"""The job as a Temporal workflow (`crashlab[temporal]`), one activity per tool call, its worker killed for real.

What a Temporal user writes: a workflow that asks the model (an activity, as Temporal's guides for
AI agents put every model call) and runs each tool call it answers as an activity, and a worker
that hosts both. The worker is this process, which a sweep kills; the workflow's history lives in
the Temporal dev server of the run directory (`server`), over a SQLite database there, and outlives
it. A restart is Temporal's own: a new worker polls the same task queue, replays the workflow from
its history, and waits for its result. An activity runs at least once: if the worker dies after
the activity's effect and before the server recorded its completion, the server retries it once its
start-to-close timeout has passed, so the timeouts here are short. The keyed variant sends a key made of
Temporal's own durable IDs, the workflow run ID and the activity ID.

The model is scripted: an activity that answers reply k when the conversation holds k model replies,
with the job's call IDs as tool-call IDs; the workflow resolves ``$A`` from A's result. Crash points,
besides the service's own ``accepted`` (inside the activity, after the commit, before the worker
reports the completion): in the workflow, ``model-asked`` and ``model-replied`` around the model's
activity, ``step`` and ``step-recorded`` around each tool's, all of them passed again as a restart
replays the history. Only this module imports Temporal.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

import crashlab
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.script import resolved
from crashlab.runtimes.temporal.server import address

WORKFLOW, QUEUE = "triage-workflow", "triage"
#: Short, so a retry after a death comes soon: a timeout is how the server learns a worker died. It bounds each
#: activity attempt, each workflow task, and how long a workflow task waits on the dead worker's sticky queue
#: (10 s by default) before any worker may take it. Long enough that a live worker never meets it: a workflow
#: task takes 5 ms (52 ms at most in a depth-2 sweep of 2,256 tasks), yet under a CI run's load one outlived a
#: 1 s timeout and ran again, passing its points twice, and the sweep refused the loop as not deterministic.
TIMEOUT = timedelta(seconds=3)

#: What the process's workflow and activities work with: set by `entry` before the worker starts.
_now: dict[str, Any] = {}


@activity.defn
def ask_model(conversation: list[dict[str, Any]]) -> dict[str, Any]:
    """The job's reply k, when the conversation holds k model replies: tool calls, or the final answer."""
    turn = _now["job"].turns[sum(message["role"] == "assistant" for message in conversation)]
    if turn.is_final:
        return {"role": "assistant", "content": turn.answer, "calls": []}
    return {"role": "assistant", "content": "", "calls": [
        {"id": call.id, "tool": call.tool, "args": dict(call.args)} for call in turn.calls]}


@activity.defn
def call_tool(tool: str, args: dict[str, Any]) -> Any:
    info = activity.info()
    key = f"{info.workflow_run_id}:{info.activity_id}" if _now["keyed"] else None
    if tool == "create_issue":
        return http.create_issue(args["title"], args["body"], key=key)
    if tool == "comment":
        return http.comment(args["issue"], args["body"], key=key)
    return http.search(args["query"])


@workflow.defn(name="triage")
class JobWorkflow:
    @workflow.run
    async def run(self) -> str:
        conversation: list[dict[str, Any]] = []
        results: dict[str, Any] = {}
        while True:
            crashlab.point("model-asked")
            reply = await workflow.execute_activity(ask_model, conversation, start_to_close_timeout=TIMEOUT)
            crashlab.point("model-replied")
            conversation.append(reply)
            if not reply["calls"]:
                return str(reply["content"])
            for call in reply["calls"]:
                args = resolved(call["args"], results)
                crashlab.point("step")
                results[call["id"]] = await _run_tool(call["tool"], args)
                crashlab.point("step-recorded")
                conversation.append({"role": "tool", "id": call["id"], "content": results[call["id"]]})


class WorkflowFailed(Exception):
    """The workflow failed for good (an activity out of attempts): what a restart finds and cannot go on from."""


async def _run_tool(tool: str, args: dict[str, Any]) -> Any:
    """One tool call as the row runs it: an activity (retried by the server's default policy, or never, under
    ``temporal-once``), or a local activity, whose result the worker records with its next workflow task."""
    if _now["slug"] == "temporal-local":
        return await workflow.execute_local_activity(call_tool, args=[tool, args], start_to_close_timeout=TIMEOUT)
    retry = RetryPolicy(maximum_attempts=1) if _now["slug"] == "temporal-once" else None
    return await workflow.execute_activity(call_tool, args=[tool, args], start_to_close_timeout=TIMEOUT,
                                           retry_policy=retry)


def entry(slug: str, run: Run) -> None:
    """One process: a worker over the run's server; start the workflow, or wait for the one a death left."""
    assert run.directory is not None, "Temporal runs only forked, in a run directory"
    _now.update(job=run.job, slug=slug, keyed=slug == "temporal-keyed")
    asyncio.run(_work(address(run.directory)))


#: What a dev server just started answers before its frontend serves: "not healthy", or, under a CI run's load, a
#: reset connection (`get_system_info` call error ... "transport error" ... ConnectionReset).
NOT_READY = ("not healthy", "transport error")


async def _connect(target: str) -> Client:
    """A client of the run's server, once its frontend serves: a server just started listens before it does."""
    for _ in range(300):
        try:
            return await Client.connect(target)
        except RuntimeError as error:
            if not any(said in str(error) for said in NOT_READY):
                raise
        await asyncio.sleep(0.1)
    raise RuntimeError(f"the Temporal dev server at {target} never became healthy")


async def _work(target: str) -> None:
    client = await _connect(target)
    # crashlab passes through the sandbox, so the workflow's crash points reach this process's recorder; a
    # point waits for the harness's word, a pause that Temporal's deadlock detector would take for a hang
    # (debug mode turns it off, as for a debugger's pause).
    runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("crashlab"))
    with ThreadPoolExecutor(1) as tools:
        async with Worker(client, task_queue=QUEUE, workflows=[JobWorkflow], activities=[ask_model, call_tool],
                          activity_executor=tools, max_concurrent_activities=1, workflow_runner=runner,
                          sticky_queue_schedule_to_start_timeout=TIMEOUT, debug_mode=True):
            handle: WorkflowHandle[Any, str] = client.get_workflow_handle(WORKFLOW)
            try:
                await handle.describe()
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                handle = await client.start_workflow(JobWorkflow.run, id=WORKFLOW, task_queue=QUEUE,
                                                     task_timeout=TIMEOUT)
            try:
                await handle.result()
            except WorkflowFailureError as failed:  # with its causes, which Temporal's own message leaves out
                causes: list[str] = []
                cause: BaseException | None = failed.cause
                while cause is not None:
                    causes.append(str(cause) or type(cause).__name__)
                    cause = cause.__cause__
                raise WorkflowFailed(": ".join(causes)) from failed
