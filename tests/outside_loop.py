"""A loop that keeps its progress outside its run directory, in a file named after the directory.

It is what a loop does that keeps its state in a database named after its run (a SQLite file under
~/.cache, a Redis key): its run directory holds nothing. A restart in the directory a death left
finds its progress and goes on; a restart from a copy of that directory, elsewhere, finds none and
files its issues again. Sharing restarts from copies, so a loop like this must be refused, not
trusted. It imports nothing of crashlab's: it finds the service and its directory in the environment,
and keeps its files in the folder OUTSIDE_LOOP_STATE names.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from pathlib import Path

TITLES = {"A": "Login fails on Safari", "B": "Export times out"}


def progress_file() -> Path:
    run = os.environ["CRASHLAB_RUN_DIR"]
    return Path(os.environ["OUTSIDE_LOOP_STATE"]) / f"{hashlib.sha256(run.encode()).hexdigest()[:16]}.json"


def triage() -> None:
    saved = progress_file()
    done = json.loads(saved.read_text()) if saved.exists() else {}
    for step, title in TITLES.items():
        if step in done:
            continue
        request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                         json.dumps({"title": title, "body": ""}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            done[step] = json.load(response)["number"]
        saved.write_text(json.dumps(done))
