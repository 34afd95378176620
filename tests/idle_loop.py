"""A loop with two mistakes a user's loop makes, over plain HTTP, knowing nothing of crashlab.

It marks the run started before its first request, and a restart that finds the mark takes the work
for done and returns at once: a resume condition that tests the wrong thing. Its client sends each
request once and raises on any error, a 504 included: it does not retry. And it has no crash point
of its own, so a sweep can kill it only where the service commits a request (``accepted``).
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

EFFECTS = {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"}}


def triage() -> None:
    started = Path(os.environ["CRASHLAB_RUN_DIR"]) / "started"
    if started.exists():
        return
    started.write_text("yes")
    for effect in EFFECTS.values():
        request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                         json.dumps({"title": effect["issue"], "body": ""}).encode(),
                                         {"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).close()
