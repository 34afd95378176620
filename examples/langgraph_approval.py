"""A LangGraph graph built by hand, with a person's approval as an interrupt, calling an issue service.

It files issue A, stops at an ``interrupt`` for a person to approve issue B, files B once approved,
and comments on A. Its progress is LangGraph's own: a ``SqliteSaver`` in its run directory, saved
after every node, one task at a time (``durability="sync"`` and ``max_concurrency=1``: with
LangGraph's defaults it saves on background threads, two runs of the graph do not pass the
checkpointer's writes in the same order, and their crash points could not be named). A process
starts the graph, or resumes it from its last checkpoint; one that finds the graph stopped at the
interrupt asks the person again and resumes it with the answer, as a server that lost its request
would. ``plain`` sends its requests as they are; ``keyed`` sends each with an ``Idempotency-Key``
made of the thread and the node, so a node LangGraph runs again after a death is answered, not
applied again.

It keeps all it keeps in its run directory, so a sweep may restart it from copies, once it has
checked that it may::

    crashlab sweep --loop examples/langgraph_approval.py:plain,keyed --effects examples/langgraph_approval.yaml \\
        --state-in-run-dir

It imports nothing of crashlab's but its optional crash points around each checkpoint write (it
needs ``pip install langgraph langgraph-checkpoint-sqlite``). Where the service is
(``CRASHLAB_TRACKER_URL``, ``CRASHLAB_PERSON_URL``) and its directory (``CRASHLAB_RUN_DIR``) it
reads when it runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.request
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

try:  # crash points of its own, beside the service's: optional, and nothing without crashlab
    from crashlab import point
except ImportError:
    def point(label: str) -> None:
        pass

THREAD = "triage"


class Triage(TypedDict, total=False):
    A: int
    B: int
    C: int
    approved: bool


def call(url: str, payload: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    with urllib.request.urlopen(urllib.request.Request(url, json.dumps(payload).encode(), headers), timeout=30) as r:
        return dict(json.load(r))


def graph(keyed: bool) -> StateGraph:
    """The graph's nodes: one request each, or the person's decision."""
    tracker = os.environ["CRASHLAB_TRACKER_URL"]

    def key(node: str) -> str | None:
        return f"{THREAD}:{node}" if keyed else None

    def file_a(state: Triage) -> Triage:
        return {"A": call(f"{tracker}/issues", {"title": "Login fails on Safari", "body": ""}, key("A"))["number"]}

    def approval(state: Triage) -> Triage:
        return {"approved": bool(interrupt({"action": "file the issue 'Export times out'"}))}

    def file_b(state: Triage) -> Triage:
        if not state["approved"]:
            return {}
        return {"B": call(f"{tracker}/issues", {"title": "Export times out", "body": ""}, key("B"))["number"]}

    def comment(state: Triage) -> Triage:
        said = {"body": "Same root cause as the export timeout"}
        return {"C": call(f"{tracker}/issues/{state['A']}/comments", said, key("C"))["number"]}

    built = StateGraph(Triage)
    for node in (file_a, approval, file_b, comment):
        built.add_node(node.__name__, node)
    built.add_edge(START, "file_a").add_edge("file_a", "approval").add_edge("approval", "file_b")
    built.add_edge("file_b", "comment").add_edge("comment", END)
    return built


class MarkedSaver(SqliteSaver):
    """LangGraph's SQLite checkpointer, with a crash point on each side of every write it makes."""

    def put(self, *args: Any, **kwargs: Any) -> Any:
        point("put")
        saved = super().put(*args, **kwargs)
        point("put-done")
        return saved

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        point("put-writes")
        super().put_writes(*args, **kwargs)
        point("put-writes-done")


def ask(action: str) -> bool:
    """The person's decision on `action`."""
    return bool(call(os.environ["CRASHLAB_PERSON_URL"] + "/approvals", {"action": action})["approved"])


def triage(keyed: bool) -> None:
    with sqlite3.connect(Path(os.environ["CRASHLAB_RUN_DIR"]) / "graph.sqlite", check_same_thread=False) as saved:
        app = graph(keyed).compile(checkpointer=MarkedSaver(saved))
        config: Any = {"configurable": {"thread_id": THREAD}, "max_concurrency": 1}
        state = app.get_state(config)
        start: Any = {} if state.created_at is None else None  # a new run, or a restart from the last checkpoint
        while True:
            if state.interrupts:
                start = Command(resume=ask(state.interrupts[0].value["action"]))
                point("answered")
            app.invoke(start, config, durability="sync")
            state = app.get_state(config)
            if not state.next:
                return


def plain() -> None:
    triage(keyed=False)


def keyed() -> None:
    triage(keyed=True)
