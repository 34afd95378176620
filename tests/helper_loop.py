"""A loop that files each issue from a helper in a session of its own, and waits for the helper to end.

Each step (post the issue, save that it is done) is done by a grandchild that left the loop's process
group and session (``setsid``, then a second fork), as a loop does that hands work to a daemon or to
``subprocess.Popen(start_new_session=True)``; the helper waits a moment before it posts. ``inline``
does the same steps in the loop's own process: under a machine's death the two are one loop. A
process starts by waiting a moment too, as a real agent takes time to start: long enough for a
helper that survived the death of the process before to finish its step first. It imports nothing of
crashlab's: it finds the service and its directory in the environment.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

TITLES = {"A": "Login fails on Safari", "B": "Export times out"}


def file_issue(step: str, title: str) -> None:
    """Post the issue, then save that the step is done."""
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                     json.dumps({"title": title, "body": ""}).encode(),
                                     {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
    (Path(os.environ["CRASHLAB_RUN_DIR"]) / step).write_text("done")


def in_helper(work: Callable[[], None]) -> None:
    """Run `work` in a grandchild in a session of its own, which waits a moment first; return once it ended
    (the pipe it holds closes)."""
    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read)
        os.setsid()
        if os.fork() == 0:
            time.sleep(0.02)
            work()
        os._exit(0)
    os.close(write)
    os.waitpid(middle, 0)
    os.read(read, 1)  # end of file: the helper ended
    os.close(read)


def triage(by_helper: bool) -> None:
    time.sleep(0.1)
    here = Path(os.environ["CRASHLAB_RUN_DIR"])
    for step, title in TITLES.items():
        if not (here / step).exists():
            if by_helper:
                in_helper(lambda: file_issue(step, title))  # noqa: B023 (the helper runs before the loop goes on)
            else:
                file_issue(step, title)


def helper() -> None:
    triage(by_helper=True)


def inline() -> None:
    triage(by_helper=False)
