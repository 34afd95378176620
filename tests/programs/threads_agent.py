"""An agent that files its two issues at once, on two threads, as people parallelise a reply's tool calls, each thread
saving its result in a file of its own (written and synced), then comments on the first. Which thread goes first is
the machine's to say, as it is in any program of threads; a few milliseconds of jitter make it so on an idle one.
Run as ``python threads_agent.py``; it imports nothing but the standard library and knows nothing of crashlab."""

import json
import os
import random
import threading
import time
import urllib.request
from pathlib import Path

ISSUES = [("A", "Login fails on Safari"), ("B", "Export times out")]
COMMENT = ("C", "Same root cause as the export timeout")


def post(path: str, payload: dict) -> int:
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + path, json.dumps(payload).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["number"]


def saved(step: str, number: int) -> None:
    with open(f"{step}.json", "w") as file:
        json.dump({"number": number}, file)
        file.flush()
        os.fsync(file.fileno())


def done(step: str) -> int | None:
    path = Path(f"{step}.json")
    return json.loads(path.read_text())["number"] if path.exists() and path.stat().st_size else None


def issue(step: str, title: str) -> None:
    time.sleep(random.uniform(0, 0.02))
    if done(step) is None:
        saved(step, post("/issues", {"title": title, "body": ""}))


def main() -> None:
    threads = [threading.Thread(target=issue, args=step) for step in ISSUES]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    step, text = COMMENT
    if done(step) is None:
        saved(step, post(f"/issues/{done('A')}/comments", {"body": text}))


if __name__ == "__main__":
    main()
