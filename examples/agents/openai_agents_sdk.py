"""An agent written as the OpenAI Agents SDK's docs write one: an `Agent` with function tools, run by the
`Runner` on the SDK's default model provider with an `SQLiteSession`, as ``python openai_agents_sdk.py
[--keyed]``; it knows nothing of crashlab.

The default provider's client reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from the environment, as
it always does, and speaks the Responses API; tracing is off, as for any model that is not OpenAI's
platform. The tools call the issue service at ``ISSUES_URL`` (crashlab's at ``CRASHLAB_TRACKER_URL``
when no other is set). The conversation is the session's, in ``conversation.sqlite`` in the working
directory, under a session ID kept in ``session-id``: a restart that finds the session holding the run
asks the model to go on from what it saved, with no new input. The SDK saves a turn's model reply and
its tools' results together, after the tools ran, and runs a reply's calls one at a time here
(``max_function_tool_concurrency=1``), so that what a death at a given request leaves does not depend
on a race. With ``--keyed`` each changing request carries an ``Idempotency-Key`` made of the session's
ID and the model's tool-call ID.
"""

import asyncio
import json
import os
import sys
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from agents import Agent, RunConfig, Runner, SQLiteSession, ToolExecutionConfig, function_tool, set_tracing_disabled
from agents.tool_context import ToolContext

TASK = "Triage the reports: file the login and export issues, then link the login report to the cookie bug."
SESSION = Path("session-id")
KEYED = "--keyed" in sys.argv[1:]


def service() -> str:
    return os.environ.get("ISSUES_URL") or os.environ["CRASHLAB_TRACKER_URL"]


def request(method: str, path: str, payload: dict | None = None, key: str | None = None) -> dict:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    data = None if payload is None else json.dumps(payload).encode()
    with urllib.request.urlopen(urllib.request.Request(service() + path, data, headers, method=method),
                                timeout=30) as answer:
        return json.load(answer)


def key(context: ToolContext) -> str | None:
    return f"{SESSION.read_text()}:{context.tool_call_id}" if KEYED else None


@function_tool
def create_issue(context: ToolContext, title: str, body: str) -> dict:
    """File an issue."""
    return request("POST", "/issues", {"title": title, "body": body}, key(context))


@function_tool
def search(query: str) -> dict:
    """Search the issues."""
    return request("GET", "/search?" + urllib.parse.urlencode({"q": query}))


@function_tool
def comment(context: ToolContext, issue: int, body: str) -> dict:
    """Comment on an issue."""
    return request("POST", f"/issues/{issue}/comments", {"body": body}, key(context))


def session_id() -> str:
    """The session this run resumes, its ID made and saved (written whole, then renamed) on the first start."""
    if not SESSION.exists():
        with open("session-id.tmp", "w") as file:
            file.write(uuid.uuid4().hex)
            file.flush()
            os.fsync(file.fileno())
        os.replace("session-id.tmp", SESSION)
    return SESSION.read_text()


async def main() -> None:
    set_tracing_disabled(True)
    agent = Agent(name="Triage", instructions="You triage bug reports.", model="gpt-4o-mini",
                  tools=[create_issue, search, comment])
    session = SQLiteSession(session_id(), "conversation.sqlite")
    started = await session.get_items(limit=1)
    await Runner.run(agent, [] if started else TASK, session=session,
                     run_config=RunConfig(tool_execution=ToolExecutionConfig(max_function_tool_concurrency=1)))


if __name__ == "__main__":
    asyncio.run(main())
