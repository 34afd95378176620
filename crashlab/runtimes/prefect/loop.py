"""The job as a Prefect 3 flow (`crashlab[prefect]`), one task per tool call, for a sweep that kills it for real.

What a Prefect user writes: a `@flow` that asks the model for its next reply and runs each of the
reply's tool calls as a `@task`, in order. The model is a task too (`model`), scripted: it returns
the job's turn k for the k-th reply, with ``$A`` resolved from A's result. The flow runs and their
states are in Prefect's API server (`server`: one per harness, which outlives the processes a sweep
kills, as a deployment's server does); the flow run is named for the run directory, and Prefect's
home and the task results (``PREFECT_LOCAL_STORAGE_PATH``) are in it.

A restart is Prefect's own retry of the flow run (`prefect flow-run retry ID --entrypoint ...`):
the run's flow run, read back from the server by its name, set Scheduled and run again with
`run_flow`, the steps that CLI takes. The CLI refuses a run that is still Running, as a killed one is (nothing
marks it Crashed without a worker), so the restart takes those steps itself. Retried, a task finds
its result again only if its result was persisted under the key its cache policy gives (the default
policy, inputs + task source + flow run ID, matches in the same flow run); by default Prefect
persists nothing. The `prefect-new-run` row restarts the way a script does: by calling the flow
again, which makes a new flow run, so the default policy's key never matches again. The keyed row
sends the key of the task's transaction (its cache key), which the retry computes again.

Crash points, besides the service's own ``accepted`` (inside the task, after the commit, before
Prefect writes the result): ``model-asked``/``model-replied`` inside the model task, ``task`` and
``task-returned`` on each side of a tool task's call, and ``result``/``result-written`` on each side
of every result write (`ResultStore.persist_result_record`). Only this module imports Prefect.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any

from prefect import flow, get_client, task
from prefect.cache_policies import INPUTS, CachePolicy
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
from prefect.flow_engine import run_flow
from prefect.results import ResultStore
from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_HOME,
    PREFECT_LOCAL_STORAGE_PATH,
    PREFECT_LOGGING_LEVEL,
    PREFECT_SERVER_ANALYTICS_ENABLED,
    temporary_settings,
)
from prefect.states import Scheduled
from prefect.transactions import get_transaction

import crashlab
from crashlab.protocols.run import Run
from crashlab.runtimes import http
from crashlab.runtimes.prefect.server import api_url
from crashlab.runtimes.script import resolved

FLOW = "triage-flow"
#: Where the run directory keeps Prefect's home, its task results, and the name of its flow run (one server holds
#: the flow runs of a whole sweep).
HOME, NAMED = "prefect", "flow-run-name"


@dataclass(frozen=True)
class Setting:
    """One row: how the tasks persist and key their results, the tools' key, and how a restart resumes."""

    persist: bool | None = None  # `persist_result`: None is Prefect's default (off, unless a cache policy is set)
    policy: CachePolicy | None = None  # `cache_policy`: None is Prefect's default (DEFAULT: inputs, source, run ID)
    keyed: bool = False  # each changing request carries its transaction's key (the task's cache key)
    retry: bool = True  # restart: retry the flow run (same ID); False: call the flow again (a new flow run)


#: The rows (`crashlab.runtimes.prefect.RUNTIME` names them): the flow as Prefect's docs write it,
#: the same with persisted results, keyed, and the settings that change the outcome.
SETTINGS = {
    "prefect-plain": Setting(),
    "prefect-persist": Setting(persist=True),
    "prefect-keyed": Setting(persist=True, keyed=True),
    "prefect-new-run": Setting(persist=True, retry=False),
    "prefect-inputs": Setting(persist=True, policy=INPUTS, retry=False),
}

#: What the running process's tasks work with: set by `entry` before the flow runs.
_now: dict[str, Any] = {}


def _killed_around(write: Any) -> Any:
    """`ResultStore.persist_result_record` with a crash point on each side: where a result becomes durable."""

    @wraps(write)
    def persist_result_record(self: ResultStore, *args: Any, **kwargs: Any) -> None:
        crashlab.point("result")
        write(self, *args, **kwargs)
        crashlab.point("result-written")

    return persist_result_record


# Through setattr: with Prefect installed mypy refuses the assignment to a method, without it the type is Any.
setattr(ResultStore, "persist_result_record", _killed_around(ResultStore.persist_result_record))  # noqa: B010



def key() -> str | None:
    """Prefect's own durable ID for this task: the key of the transaction that governs it, the cache key its
    policy computes (under the default policy, from the flow run ID, the task's source and its inputs),
    which a retried flow run computes again. The task run's ID and its ``dynamic_key`` are new uuids on
    every attempt (`dynamic_key_for_task_run(..., stable=False)` in ``prefect/task_engine.py``), so
    neither can be the key."""
    if not _now["setting"].keyed:
        return None
    transaction = get_transaction()
    assert transaction is not None and transaction.key, "a keyed task runs in a transaction with a cache key"
    return transaction.key


def model(k: int, results: dict[str, Any]) -> dict[str, Any]:
    """The model's reply k: the job's turn k, its calls as plain data with ``$ID`` resolved."""
    crashlab.point("model-asked")
    turn = _now["job"].turns[k]
    reply = ({"answer": turn.answer} if turn.is_final else
             {"calls": [{"id": c.id, "tool": c.tool, "args": resolved(c.args, results)} for c in turn.calls]})
    crashlab.point("model-replied")
    return reply


def create_issue(title: str, body: str) -> int:
    """File an issue; its number."""
    return http.create_issue(title, body, key=key())


def comment(issue: int, body: str) -> int:
    """Comment on an issue; the comment's number."""
    return http.comment(issue, body, key=key())


def search(query: str) -> list[int]:
    """The issues that mention `query`."""
    return http.search(query)


def build(setting: Setting) -> Any:
    """The flow and its tasks, with the row's result settings (Prefect fixes them when a task is made)."""
    persist: dict[str, Any] = {} if setting.persist is None else {"persist_result": setting.persist}
    options = {**persist, **({} if setting.policy is None else {"cache_policy": setting.policy})}
    model_task = task(model, **options)
    tools = {fn.__name__: task(fn, **options) for fn in (create_issue, comment, search)}

    @flow(name=FLOW, **persist)
    def triage_flow() -> str:
        results: dict[str, Any] = {}
        k = 0
        while "answer" not in (reply := model_task(k, results)):
            for call in reply["calls"]:
                crashlab.point("task")
                results[call["id"]] = tools[call["tool"]](**call["args"])
                crashlab.point("task-returned")
            k += 1
        return str(reply["answer"])

    return triage_flow


def entry(slug: str, run: Run) -> None:
    """One process: run the flow, or retry its flow run when the server already holds one."""
    setting, job = SETTINGS[slug], run.job
    assert run.directory is not None, "Prefect runs only forked, in a run directory"
    _now.update(setting=setting, job=job)
    home = Path(run.directory) / HOME
    home.mkdir(exist_ok=True)
    # A task that fails under a fault is the scenario's outcome, which the harness tells; Prefect logging
    # each run's states would bury a sweep's output.
    logging.getLogger("prefect").setLevel(logging.CRITICAL)
    with temporary_settings(updates={
        PREFECT_API_URL: api_url(),
        PREFECT_HOME: str(home),
        PREFECT_LOCAL_STORAGE_PATH: str(home / "results"),
        PREFECT_SERVER_ANALYTICS_ENABLED: False,
        PREFECT_LOGGING_LEVEL: "CRITICAL",
    }):
        triage_flow = build(setting).with_options(flow_run_name=_name(home))
        started = _started(triage_flow.flow_run_name)
        if started is None or not setting.retry:
            triage_flow()
        else:
            _retry(triage_flow, started)


def _name(home: Path) -> str:
    """The name of the run's flow run, made by its first process, unique across the server's flow runs."""
    named = home / NAMED
    if not named.exists():
        named.write_text(f"{FLOW}-{uuid.uuid4().hex}")
    return named.read_text()


def _started(name: str) -> Any:
    """The flow run an earlier process of this run started, if any."""
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
    return runs[0] if runs else None


def _retry(triage_flow: Any, flow_run: Any) -> None:
    """What `prefect flow-run retry ID --entrypoint ...` does for a flow run without a deployment."""
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(flow_run_id=flow_run.id, state=Scheduled(message="Retried"), force=True)
        flow_run = client.read_flow_run(flow_run.id)
    run_flow(flow=triage_flow, flow_run=flow_run, parameters={}, return_type="result")
