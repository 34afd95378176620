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
returned to the workflow. Only this module and `launch` import DBOS.
"""

from __future__ import annotations

from typing import Any

from dbos import DBOS, SetWorkflowID

import crashlab
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.dbos.launch import launch, warm_engine
from crashlab.runtimes.script import resolved

WORKFLOW = "triage-workflow"

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


#: Run by the harness before it forks a process of this loop (`Adapter.load`).
warm = warm_engine


def entry(slug: str, run: Run) -> None:
    """One process: launch DBOS over the run's database; start the workflow, or wait for its recovery."""
    assert run.directory is not None, "DBOS runs only forked, in a run directory"
    _now.update(job=run.job, keyed=slug == "dbos-keyed", run=run)
    launch(run.directory / "dbos.sqlite")
    if DBOS.get_workflow_status(WORKFLOW) is None:
        with SetWorkflowID(WORKFLOW):
            DBOS.start_workflow(job_workflow).get_result()
    else:
        DBOS.retrieve_workflow(WORKFLOW).get_result(polling_interval_sec=0.01)
