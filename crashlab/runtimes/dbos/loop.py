"""The job as a DBOS workflow (`crashlab[dbos]`), one step per tool call, for a sweep that kills it for real.

What a DBOS user writes: a `@DBOS.workflow()` that runs the job's calls in order, each a
`@DBOS.step()`, over a SQLite system database in the run's directory. A restart is DBOS's own:
the process launches DBOS again, which recovers the pending workflow from its recorded steps, and
waits for it. A step runs at least once: if the process dies after the step's effect and before
DBOS recorded its output, recovery runs it again. The keyed variant sends a key made of DBOS's own
durable IDs, the workflow ID and the step ID. The steps call crashlab's service over plain HTTP
(`crashlab.runtimes.http`), which recognises the job's effects by what they are.

Crash points, besides the service's own ``accepted`` (inside the step, after the commit, before
DBOS records the output): ``step`` just before each step and ``step-recorded`` just after it
returned to the workflow. Only this module imports DBOS.
"""

from __future__ import annotations

from typing import Any

from dbos import DBOS, SetWorkflowID
from dbos._dbos import _get_or_create_dbos_registry

import crashlab
from crashlab.engine.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.script import resolved

WORKFLOW = "triage-workflow"
#: Seconds between looks of DBOS's internal queue, where recovery puts a pending workflow (see `entry`).
RECOVERY_POLL = 0.01

#: What the process's workflow and steps work with: set by `agent` before DBOS launches.
_now: dict[str, Any] = {}


@DBOS.step()
def tool_step(call_id: str, tool: str, args: dict[str, Any]) -> Any:
    key = f"{DBOS.workflow_id}:{DBOS.step_id}" if _now["keyed"] else None
    if tool == "create_issue":
        return http.create_issue(args["title"], args["body"], key=key)
    if tool == "comment":
        return http.comment(args["issue"], args["body"], key=key)
    return http.search(args["query"])


@DBOS.workflow()
def job_workflow() -> dict[str, Any]:
    results: dict[str, Any] = {}
    for turn in _now["job"].turns:
        for call in turn.calls:
            args = resolved(call.args, results)
            crashlab.point("step")
            results[call.id] = tool_step(call.id, call.tool, args)
            crashlab.point("step-recorded")
    return results


def entry(slug: str, run: Run) -> None:
    """One process: launch DBOS over the run's database; start the workflow, or wait for its recovery."""
    assert run.directory is not None, "DBOS runs only forked, in a run directory"
    _now.update(job=run.job, keyed=slug == "dbos-keyed", run=run)
    # A step that fails under a fault is the scenario's outcome, which the harness tells; DBOS logging
    # each one's traceback too would bury a sweep's output.
    DBOS(config={"name": "crashlab", "system_database_url": f"sqlite:///{run.directory / 'dbos.sqlite'}",
                 "run_admin_server": False, "log_level": "CRITICAL"})  # type: ignore[typeddict-unknown-key]
    # Recovery puts a pending workflow on DBOS's internal queue, which a thread polls once a second
    # (DEFAULT_QUEUE_POLLING_INTERVAL_SEC): every restart waited about a second for it to start. DBOS has
    # a setting for its Kafka queues' interval, none for this one, so it is set on the queue itself: the
    # interval is how soon a worker looks, and changes nothing of what it does.
    _get_or_create_dbos_registry().get_internal_queue()._polling_interval_sec = RECOVERY_POLL
    DBOS.launch()  # recovers a pending workflow in the background, as after any crash
    if DBOS.get_workflow_status(WORKFLOW) is None:
        with SetWorkflowID(WORKFLOW):
            DBOS.start_workflow(job_workflow).get_result()
    else:
        DBOS.retrieve_workflow(WORKFLOW).get_result(polling_interval_sec=0.01)
