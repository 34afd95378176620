"""A loop of yours that runs its three tool calls at once on a thread pool, and counts its answers to resume.

It imports nothing of crashlab's but `crashlab.point`. Each call files an issue through crashlab's
service over plain HTTP; as each answer comes, the loop saves how many have come, and a restart
makes the calls after that many, in the order it submits them (A, B, C), as if the answers came in
that order. They need not: a death after B's and C's answers came, before A reached the service,
leaves A never made and B and C made twice. Only the orders in which A reaches the service last
(BCA and CBA) leave that state, and A goes first unless two decisions of the schedule keep it back.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import crashlab

EFFECTS = {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"},
           "C": {"issue": "Dark mode is unreadable"}}


def create_issue(title: str) -> int:
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                     json.dumps({"title": title, "body": ""}).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["number"]


def counting() -> None:
    progress = Path(os.environ["CRASHLAB_RUN_DIR"]) / "answered"
    answered = int(progress.read_text()) if progress.exists() else 0
    lock = threading.Lock()

    def call(title: str) -> None:
        nonlocal answered
        crashlab.point("calling")
        create_issue(title)
        crashlab.point("answered")
        with lock:
            answered += 1
            temporary = progress.with_suffix(".tmp")
            temporary.write_text(str(answered))
            os.replace(temporary, progress)

    titles = [effect["issue"] for effect in EFFECTS.values()][answered:]
    with ThreadPoolExecutor(max_workers=len(EFFECTS)) as pool:
        for future in [pool.submit(call, title) for title in titles]:
            future.result()
