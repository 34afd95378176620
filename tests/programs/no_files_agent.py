"""An agent that keeps nothing on disk: run as ``python no_files_agent.py``, it files two issues and comments on
the first through the issue service at ``CRASHLAB_TRACKER_URL``, each request under an ``Idempotency-Key`` that
names its step (the same in every process, for it saves no run ID), and writes no file. It imports nothing but
the standard library.
"""

import json
import os
import urllib.request


def post(path: str, payload: dict, key: str) -> int:
    headers = {"Content-Type": "application/json", "Idempotency-Key": key}
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + path, json.dumps(payload).encode(), headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["number"]


if __name__ == "__main__":
    login = post("/issues", {"title": "Login fails on Safari", "body": ""}, "A")
    post("/issues", {"title": "Export times out", "body": ""}, "B")
    post(f"/issues/{login}/comments", {"body": "Same root cause as the export timeout"}, "C")
