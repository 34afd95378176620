"""An agent written as the `anthropic` SDK's docs write one: a tool loop over ``client.messages.create`` with
tools, run as ``python anthropic_agent.py [--keyed]``, that knows nothing of crashlab.

The client reads ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY`` from the environment; the tools call the
issue service at ``ISSUES_URL`` (crashlab's at ``CRASHLAB_TRACKER_URL`` when no other is set). The
conversation is kept in ``conversation.jsonl``, a message appended and synced as each is decided, its first
line the run's ID: the model's message with its ``tool_use`` blocks as it came, each call's result a user
message holding its ``tool_result`` (the results of one reply sent as one message, as the API asks). A
restart asks the model again only when every call has its result, and runs a call that has none. With
``--keyed`` each changing request carries an ``Idempotency-Key`` made of the run's ID and the call's ID.
"""

import json
import os
import sys
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import anthropic

SAVED = Path("conversation.jsonl")
TASK = "Triage the reports: file the login and export issues, then link the login report to the cookie bug."
TOOLS = [
    {"name": "create_issue", "description": "File an issue.", "input_schema": {
        "type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
        "required": ["title", "body"]}},
    {"name": "search", "description": "Search the issues.", "input_schema": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
    {"name": "comment", "description": "Comment on an issue.", "input_schema": {
        "type": "object", "properties": {"issue": {"type": "integer"}, "body": {"type": "string"}},
        "required": ["issue", "body"]}},
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
        file.write("".join(json.dumps(message) + "\n" for message in saved))
        file.flush()
        os.fsync(file.fileno())


def conversation(saved: list[dict]) -> list[dict]:
    """The saved messages as the API takes them: a reply's results, saved one by one, in one user message."""
    messages: list[dict] = []
    for message in saved:
        if messages and message["role"] == messages[-1]["role"] == "user":
            messages[-1] = {"role": "user", "content": messages[-1]["content"] + message["content"]}
        else:
            messages.append(message)
    return messages


def main(keyed: bool) -> None:
    if not SAVED.exists():
        append({"run": uuid.uuid4().hex}, {"role": "user", "content": [{"type": "text", "text": TASK}]})
    run, *saved = [json.loads(line) for line in SAVED.read_text().splitlines()]
    client = anthropic.Anthropic()
    while True:
        answered = {block["tool_use_id"] for m in saved if m["role"] == "user" for block in m["content"]
                    if block["type"] == "tool_result"}
        pending = [block for m in saved if m["role"] == "assistant" for block in m["content"]
                   if block["type"] == "tool_use" and block["id"] not in answered]
        if not pending:
            if saved[-1]["role"] == "assistant":
                return  # the model's answer is saved: the run is done
            response = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, tools=TOOLS,
                                              messages=conversation(saved))
            message = {"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                                        for block in response.content]}
            append(message)
            saved.append(message)
            continue
        for call in pending:
            key = f"{run['run']}:{call['id']}" if keyed else None
            result = run_tool(call["name"], call["input"], key)
            message = {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call["id"], "content": json.dumps(result)}]}
            append(message)
            saved.append(message)


if __name__ == "__main__":
    main(keyed="--keyed" in sys.argv[1:])
