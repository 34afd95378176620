"""An agent written as the `openai` SDK's docs write one: a hand-written tool loop, run as
``python openai_loop.py [--keyed]``, that knows nothing of crashlab.

The client reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from the environment, as it always does;
the tools call the issue service at ``ISSUES_URL`` (crashlab's at ``CRASHLAB_TRACKER_URL`` when no other
is set). The conversation is kept in ``conversation.jsonl`` in the working directory, a line appended
and synced as each message is decided, so a restart resumes it: it asks the model again only when the
last reply's every call has its result, and runs a call that has none. With ``--keyed`` each changing
request carries an ``Idempotency-Key`` made of the run's ID and the model's tool-call ID. With
``--whole-turns`` a reply is saved only with its calls' results, once they all have one, as the Agents SDK's
session saves a turn's items: a restart asks the model again for a turn whose calls it had begun.
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


def append(*saved: dict) -> None:
    with open(SAVED, "a") as file:
        file.write("".join(json.dumps(message) + "\n" for message in saved))
        file.flush()
        os.fsync(file.fileno())


def main(keyed: bool, whole_turns: bool) -> None:
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
            if whole_turns and message.get("tool_calls"):
                answers = [answered(call, run, keyed) for call in message["tool_calls"]]
                append(message, *answers)
                messages += [message, *answers]
                continue
            append(message)
            messages.append(message)
            continue
        for call in pending:
            answer = answered(call, run, keyed)
            append(answer)
            messages.append(answer)


def answered(call: dict, run: str, keyed: bool) -> dict:
    """The call run, and its result as the conversation holds it."""
    key = f"{run}:{call['id']}" if keyed else None
    result = run_tool(call["function"]["name"], json.loads(call["function"]["arguments"]), key)
    return {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}


if __name__ == "__main__":
    main(keyed="--keyed" in sys.argv[1:], whole_turns="--whole-turns" in sys.argv[1:])
