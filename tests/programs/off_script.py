"""A program that asks the model what no job says: a conversation whose first reply files one issue, where
the triage job's first reply files two. It uses only the standard library, as any client of the wire may."""

import contextlib
import json
import os
import urllib.error
import urllib.request

call = {"id": "call_1", "type": "function",
        "function": {"name": "create_issue", "arguments": json.dumps({"title": "Login fails on Chrome", "body": ""})}}
body = {"model": "any", "tools": [], "messages": [
    {"role": "user", "content": "triage"}, {"role": "assistant", "tool_calls": [call]},
    {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"number": 1})}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json", "Authorization": "Bearer any"})
with contextlib.suppress(urllib.error.HTTPError):  # the service answers 400, and the sweep hears why
    urllib.request.urlopen(request, timeout=30)
