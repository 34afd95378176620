"""An agent written as the `openai` SDK's docs write one: a hand-written tool loop, run as
``python openai_loop.py [--keyed]``, that knows nothing of crashlab.

The client reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from the environment, as it always does;
the tools call the issue service at ``ISSUES_URL`` (crashlab's at ``CRASHLAB_TRACKER_URL`` when no other
is set). The conversation is kept in ``conversation.jsonl`` in the working directory, a line appended
and synced as each message is decided, so a restart resumes it: it asks the model again only when the
last reply's every call has its result, and runs a call that has none. With ``--keyed`` each changing
request carries an ``Idempotency-Key`` made of the run's ID and the model's tool-call ID.
"""

import json
import os
import sys
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from openai import OpenAI

SAVED = Path("conversation.jsonl")
TASK = "Triage the reports: file the login and export issues, then link the login report to the cookie bug."
TOOLS = [
    {"type": "function", "function": {"name": "create_issue", "description": "File an issue.", "parameters": {
        "type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
        "required": ["title", "body"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the issues.", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
    {"type": "function", "function": {"name": "comment", "description": "Comment on an issue.", "parameters": {
        "type": "object", "properties": {"issue": {"type": "integer"}, "body": {"type": "string"}},
        "required": ["issue", "body"]}}},
]


def service() -> str:
    return os.environ.get("ISSUES_URL") or os.environ["CRASHLAB_TRACKER_URL"]


def request(method: str, path: str, payload: dict | None = None, key: str | None = None) -> dict:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    data = None if payload is None else json.dumps(payload).encode()
    with urllib.request.urlopen(urllib.request.Request(service() + path, data, headers, method=method),
                                timeout=30) as answer:
        return json.load(answer)


def run_tool(name: str, args: dict, key: str | None) -> dict:
    if name == "create_issue":
        return request("POST", "/issues", {"title": args["title"], "body": args["body"]}, key)
    if name == "comment":
        return request("POST", f"/issues/{args['issue']}/comments", {"body": args["body"]}, key)
    return request("GET", "/search?" + urllib.parse.urlencode({"q": args["query"]}))


def append(message: dict) -> None:
    with open(SAVED, "a") as file:
        file.write(json.dumps(message) + "\n")
        file.flush()
        os.fsync(file.fileno())


def main(keyed: bool) -> None:
    messages = [json.loads(line) for line in SAVED.read_text().splitlines()] if SAVED.exists() else []
    if not messages:
        for message in ({"role": "system", "content": f"run {uuid.uuid4().hex}"}, {"role": "user", "content": TASK}):
            append(message)
            messages.append(message)
    run = messages[0]["content"].removeprefix("run ")
    client = OpenAI()
    while True:
        last = messages[-1]
        pending = [] if last["role"] == "user" else [
            call for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or []
            if not any(r["role"] == "tool" and r["tool_call_id"] == call["id"] for r in messages)]
        if not pending:
            if last["role"] == "assistant" and not last.get("tool_calls"):
                return  # the final answer is saved: the run is done
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            message = reply.choices[0].message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})
            append(message)
            messages.append(message)
            continue
        for call in pending:
            key = f"{run}:{call['id']}" if keyed else None
            result = run_tool(call["function"]["name"], json.loads(call["function"]["arguments"]), key)
            answer = {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            append(answer)
            messages.append(answer)


if __name__ == "__main__":
    main(keyed="--keyed" in sys.argv[1:])
