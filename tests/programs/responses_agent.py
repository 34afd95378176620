"""An agent written as the `openai` SDK's docs write one on the Responses API: a tool loop over
``client.responses.create`` with function tools, run as ``python responses_agent.py [--keyed]``, that knows
nothing of crashlab.

The client reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from the environment; the tools call the issue
service at ``ISSUES_URL`` (crashlab's at ``CRASHLAB_TRACKER_URL`` when no other is set). The program keeps
its own conversation (``store=False``, the whole of it sent each time) in ``conversation.jsonl``, an item
appended and synced as each is decided, its first line the run's ID: the model's ``function_call`` items as
they came, each call's result a ``function_call_output``. A restart asks the model again only when every call
has its output, and runs a call that has none. With ``--keyed`` each changing request carries an
``Idempotency-Key`` made of the run's ID and the call's ID.
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
    {"type": "function", "name": "create_issue", "description": "File an issue.", "parameters": {
        "type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
        "required": ["title", "body"], "additionalProperties": False}},
    {"type": "function", "name": "search", "description": "Search the issues.", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"],
        "additionalProperties": False}},
    {"type": "function", "name": "comment", "description": "Comment on an issue.", "parameters": {
        "type": "object", "properties": {"issue": {"type": "integer"}, "body": {"type": "string"}},
        "required": ["issue", "body"], "additionalProperties": False}},
]


def request(method: str, path: str, payload: dict | None = None, key: str | None = None) -> dict:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    data = None if payload is None else json.dumps(payload).encode()
    service = os.environ.get("ISSUES_URL") or os.environ["CRASHLAB_TRACKER_URL"]
    with urllib.request.urlopen(urllib.request.Request(service + path, data, headers, method=method),
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
        file.write("".join(json.dumps(item) + "\n" for item in saved))
        file.flush()
        os.fsync(file.fileno())


def main(keyed: bool) -> None:
    if not SAVED.exists():
        append({"run": uuid.uuid4().hex}, {"role": "user", "content": TASK})
    run, *items = [json.loads(line) for line in SAVED.read_text().splitlines()]
    client = OpenAI()
    while True:
        answered = {item["call_id"] for item in items if item.get("type") == "function_call_output"}
        pending = [item for item in items if item.get("type") == "function_call" and item["call_id"] not in answered]
        if not pending:
            if items[-1].get("type") == "message":
                return  # the model's answer is saved: the run is done
            response = client.responses.create(model="gpt-4o-mini", input=items, tools=TOOLS, store=False)
            for item in response.output:
                said = item.model_dump(exclude_none=True)
                append(said)
                items.append(said)
            continue
        for call in pending:
            key = f"{run['run']}:{call['call_id']}" if keyed else None
            result = run_tool(call["name"], json.loads(call["arguments"]), key)
            output = {"type": "function_call_output", "call_id": call["call_id"], "output": json.dumps(result)}
            append(output)
            items.append(output)


if __name__ == "__main__":
    main(keyed="--keyed" in sys.argv[1:])
