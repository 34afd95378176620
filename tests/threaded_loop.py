"""A loop of yours that runs its three tool calls at once on threads: on a pool, as a parallel tool node does
(`parallel`), or each in an asyncio task of its own, as an event-loop runtime does (`gathered`).

It imports nothing of crashlab's but `crashlab.point`. Each call files an issue through crashlab's
service over plain HTTP (no key), and saves its answer in the run's folder under a lock shared by
the calls; a restart makes again the calls it finds no answer for. Each call first sleeps a random
while (`os.urandom`), so that left to the operating system the calls would reach the service in
another order in each run: only the harness's schedule makes its runs repeat themselves.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import urllib.request
from collections.abc import Callable
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


def parallel() -> None:
    """The calls on a thread pool, waited for one by one."""
    call, todo = calls()
    with ThreadPoolExecutor(max_workers=len(EFFECTS)) as pool:
        futures = [pool.submit(call, step, title) for step, title in todo]
        for future in futures:
            future.result()


def gathered() -> None:
    """The calls each in an asyncio task of its own, each on a thread (`asyncio.to_thread`), as the OpenAI Agents
    SDK runs a reply's sync tools: the event loop's thread waits for them in its selector."""
    call, todo = calls()

    async def reply() -> None:
        await asyncio.gather(*(asyncio.to_thread(call, step, title) for step, title in todo))

    asyncio.run(reply())


def calls() -> tuple[Callable[[str, str], None], list[tuple[str, str]]]:
    """The call that files one issue and saves its answer, and the calls a restart still has to make."""
    progress = Path(os.environ["CRASHLAB_RUN_DIR"]) / "progress.json"
    done = json.loads(progress.read_text()) if progress.exists() else {}
    lock = threading.Lock()

    def call(step: str, title: str) -> None:
        time.sleep(os.urandom(1)[0] / 25_500)  # up to 10 ms
        crashlab.point("calling")
        number = create_issue(title)
        crashlab.point("answered")
        with lock:
            done[step] = number
            temporary = progress.with_suffix(".tmp")
            temporary.write_text(json.dumps(done))
            os.replace(temporary, progress)
        crashlab.point("saved")

    return call, [(step, effect["issue"]) for step, effect in EFFECTS.items() if step not in done]
