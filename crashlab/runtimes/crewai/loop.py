"""The job as a CrewAI Flow saved by ``@persist`` on SQLite (`crashlab[crewai]`), for a sweep that kills it for real.

What a CrewAI user writes: a `Flow` over a structured state (`FlowState`, whose ``id`` is the
flow's persisted identity), one method per turn of the job chained with ``@start``/``@listen``,
``@persist`` with the default `SQLiteFlowPersistence` pointed at a file in the run directory, and a
restart that resumes the way CrewAI documents: ``kickoff(inputs={"id": FLOW_ID})``, which loads the
latest state saved under that ID. No LLM: a Flow's methods call tools directly (CrewAI's
"coding tasks" between crews), and the job's turns are scripted, so a model would only echo them;
the tools call crashlab's service over plain HTTP (`crashlab.runtimes.http`).

CrewAI restores the state, not the progress: a flow restored by its ID runs again from ``@start``
(``_completed_methods`` stays empty, "the flow executes from scratch", runtime/__init__.py). So each
method skips the calls whose results the restored state holds, as a CrewAI user tracks progress in
state; a call whose effect landed after the last save runs again. The keyed variant sends a key
made of CrewAI's own durable IDs: the flow's state ID and the call ID.

Crash points, besides the service's own ``accepted``: ``step`` as each method starts, and ``save``
and ``saved`` on each side of every state save (`KilledPersistence`). Telemetry and tracing are
off (their environment switches, and ``tracing=False``): nothing leaves the machine. Nothing is
left outside the run directory either: CrewAI's storage directory (a Flow's memory) and its lock
files go there (importing CrewAI still makes an empty directory in the user's data directory, named
after the working directory). What CrewAI prints goes to /dev/null. Only this module imports CrewAI.
"""

from __future__ import annotations

import os
import types
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, redirect_stdout
from dataclasses import dataclass
from hashlib import md5
from pathlib import Path
from typing import Any, Literal

# CrewAI reads these when it would send something; set before it is imported, in every process.
os.environ.update(CREWAI_DISABLE_TELEMETRY="true", CREWAI_DISABLE_TRACKING="true", OTEL_SDK_DISABLED="true",
                  CREWAI_TRACING_ENABLED="false")

from crewai.flow.flow import Flow, FlowState, listen, start
from crewai.flow.persistence import SQLiteFlowPersistence, persist
from crewai.memory.storage import lancedb_storage  # noqa: F401  (see `entry`)
from crewai_core.lock_store import set_lock_backend
from portalocker import Lock
from pydantic import BaseModel, Field

import crashlab
from crashlab.job import Job, Turn
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.script import resolved

# LanceDB warns at each fork that one could deadlock if its runtime was mid-operation: in the process that
# forks, LanceDB is only imported (each forked process opens its own store), so nothing is mid-operation.
warnings.filterwarnings("ignore", message="lancedb fork support is experimental", category=RuntimeWarning)

FLOW_ID = "triage-flow"


class TriageState(FlowState):
    """The flow's state: each call's result by call ID (the progress a restart resumes from), and the answer."""

    results: dict[str, Any] = Field(default_factory=dict)
    answer: str = ""


class KilledPersistence(SQLiteFlowPersistence):
    """CrewAI's SQLite flow persistence, with a crash point on each side of every save."""

    def save_state(self, flow_uuid: str, method_name: str, state_data: dict[str, Any] | BaseModel) -> None:
        crashlab.point("save")
        super().save_state(flow_uuid, method_name, state_data)
        crashlab.point("saved")


@dataclass(frozen=True)
class Setting:
    """One row: the tools plain or keyed, and where ``@persist`` sits (which decides when state is saved)."""

    keyed: bool = False
    persist: Literal["class", "method"] = "class"  # "class": saved after every method, and restored by ID;
    # "method": saved after each decorated method, but the flow itself has no persistence to restore from


#: The rows (`crashlab.runtimes.crewai.RUNTIME` names them): ``@persist`` on the class as CrewAI's
#: docs write it, the same with keys from CrewAI's own IDs, and ``@persist`` on each method instead.
SETTINGS = {
    "crewai-plain": Setting(),
    "crewai-keyed": Setting(keyed=True),
    "crewai-method": Setting(persist="method"),
}



def call_tool(tool: str, args: dict[str, Any], key: str | None) -> Any:
    """One tool call over HTTP; a changing one carries `key` when the row is keyed."""
    if tool == "create_issue":
        return http.create_issue(args["title"], args["body"], key=key)
    if tool == "comment":
        return http.comment(args["issue"], args["body"], key=key)
    return http.search(args["query"])


def step(turn: Turn, keyed: bool) -> Callable[..., Any]:
    """The flow method for one turn: its calls in order, each skipped when the restored state holds its result."""

    def method(self: Flow[TriageState], *_: Any) -> Any:
        crashlab.point("step")
        results = self.state.results
        for call in turn.calls:
            if call.id not in results:
                key = f"{self.state.id}:{call.id}" if keyed else None
                results[call.id] = call_tool(call.tool, resolved(call.args, results), key)
        if turn.is_final:
            self.state.answer = turn.answer or ""
        return len(results)

    return method


def flow_class(job: Job, setting: Setting, persistence: SQLiteFlowPersistence) -> type[Flow[TriageState]]:
    """The flow a user writes for this job: one method per turn, each listening to the one before."""
    methods: dict[str, Any] = {}
    previous: str | None = None
    for k, turn in enumerate(job.turns):
        name = f"turn_{k}"
        method = step(turn, setting.keyed)
        method.__name__ = method.__qualname__ = name
        decorated = start()(method) if previous is None else listen(previous)(method)
        methods[name] = persist(persistence)(decorated) if setting.persist == "method" else decorated
        previous = name
    cls = types.new_class("TriageFlow", (Flow[TriageState],), exec_body=lambda namespace: namespace.update(methods))
    if setting.persist == "class":
        persist(persistence)(cls)  # what ``@persist(...)`` above ``class`` does: it marks the class itself
    return cls


def locks_in(directory: Path) -> Callable[..., AbstractContextManager[Any]]:
    """CrewAI's named locks (it takes one around each save) as files in `directory`: by default each is a file
    in the system's temporary directory, one per database, left behind by every run."""

    def backend(name: str, timeout: float) -> AbstractContextManager[Any]:
        return Lock(str(directory / f"lock-{md5(name.encode(), usedforsecurity=False).hexdigest()}"), timeout=timeout)

    return backend


def entry(slug: str, run: Run) -> None:
    """One process of the flow: kick it off by its ID, which starts it or restores its saved state."""
    setting, job = SETTINGS[slug], run.job
    assert run.directory is not None, "CrewAI runs only forked, in a run directory"
    # Every Flow makes itself a memory, a LanceDB store under CrewAI's storage directory (the user's data
    # directory unless CREWAI_STORAGE_DIR says): the run's directory, so no state outlives the run. Its
    # module is imported with this one, in the warm parent, so no forked process pays for LanceDB.
    os.environ["CREWAI_STORAGE_DIR"] = str(run.directory)
    set_lock_backend(locks_in(run.directory))
    persistence = KilledPersistence(db_path=str(run.directory / "flows.sqlite"))
    flow = flow_class(job, setting, persistence)(tracing=False, suppress_flow_events=True)
    # CrewAI prints what it restores ("Loading flow state from memory for UUID: ...") on stdout, which is
    # crashlab's (a sweep's table, explain's JSON): the story is in the crash points.
    with open(os.devnull, "w") as quiet, redirect_stdout(quiet):
        flow.kickoff(inputs={"id": FLOW_ID})
