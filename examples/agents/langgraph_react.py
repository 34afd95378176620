"""An agent written as LangGraph's docs write one: the prebuilt ReAct agent over `ChatOpenAI`, saved by
its SQLite checkpointer, run as ``python langgraph_react.py [--keyed]``; it knows nothing of crashlab.

`ChatOpenAI` reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from the environment, as it always
does; the tools call the issue service at ``ISSUES_URL`` (crashlab's at ``CRASHLAB_TRACKER_URL`` when
no other is set). The graph is saved in ``checkpoints.sqlite`` in the working directory, under a
thread whose ID is kept in ``thread-id``, so a restart resumes the thread (``invoke(None)``) where its
last checkpoint left it. The graph runs one task at a time (``max_concurrency=1``): a reply's tool
calls in turn, so that what a death at a given request leaves does not depend on a race. With
``--keyed`` each changing request carries an ``Idempotency-Key`` made of the thread's ID and the
model's tool-call ID.
"""

import json
import os
import sys
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent

TASK = "Triage the reports: file the login and export issues, then link the login report to the cookie bug."
THREAD = Path("thread-id")
KEYED = "--keyed" in sys.argv[1:]


def service() -> str:
    return os.environ.get("ISSUES_URL") or os.environ["CRASHLAB_TRACKER_URL"]


def request(method: str, path: str, payload: dict | None = None, key: str | None = None) -> dict:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    data = None if payload is None else json.dumps(payload).encode()
    with urllib.request.urlopen(urllib.request.Request(service() + path, data, headers, method=method),
                                timeout=30) as answer:
        return json.load(answer)


def key(config: RunnableConfig, tool_call_id: str) -> str | None:
    return f"{config['configurable']['thread_id']}:{tool_call_id}" if KEYED else None


@tool
def create_issue(title: str, body: str, config: RunnableConfig,
                 tool_call_id: Annotated[str, InjectedToolCallId]) -> dict:
    """File an issue."""
    return request("POST", "/issues", {"title": title, "body": body}, key(config, tool_call_id))


@tool
def search(query: str) -> dict:
    """Search the issues."""
    return request("GET", "/search?" + urllib.parse.urlencode({"q": query}))


@tool
def comment(issue: int, body: str, config: RunnableConfig, tool_call_id: Annotated[str, InjectedToolCallId]) -> dict:
    """Comment on an issue."""
    return request("POST", f"/issues/{issue}/comments", {"body": body}, key(config, tool_call_id))


def thread_id() -> str:
    """The thread this run resumes, its ID made and saved (written whole, then renamed) on the first start."""
    if not THREAD.exists():
        with open("thread-id.tmp", "w") as file:
            file.write(uuid.uuid4().hex)
            file.flush()
            os.fsync(file.fileno())
        os.replace("thread-id.tmp", THREAD)
    return THREAD.read_text()


def main() -> None:
    with SqliteSaver.from_conn_string("checkpoints.sqlite") as checkpointer:
        agent = create_react_agent(ChatOpenAI(model="gpt-4o-mini"), [create_issue, search, comment],
                                   checkpointer=checkpointer)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id()}, "max_concurrency": 1}
        started = agent.get_state(config).values
        agent.invoke(None if started else {"messages": [("user", TASK)]}, config)


if __name__ == "__main__":
    main()
