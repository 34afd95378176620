"""A loop that keeps a response cache outside its run directory, and says it keeps all in it.

It caches each answer of the service in a file of its run's under the system's temporary folder (or
the folder CACHE_DIR names), named after its run directory, keyed by what it asked, and a restart that finds an answer there takes it rather than
ask again: so a death after the cache was written and before the loop went on files nothing twice,
where a restart from a copy of its run directory alone would. Swept with ``--state-in-run-dir``, its
word, a sweep restarting from copies would count the cache some other process left; it must be
refused. It imports nothing of crashlab's: it finds the service and its folder in the environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.request
from pathlib import Path

TITLES = ["Login fails on Safari", "Export times out"]


def cached(title: str) -> int:
    run = hashlib.sha256(os.environ["CRASHLAB_RUN_DIR"].encode()).hexdigest()[:16]
    cache = Path(os.environ.get("CACHE_DIR", tempfile.gettempdir())) / f"responses-{run}.json"
    answers = json.loads(cache.read_text()) if cache.exists() else {}
    if title not in answers:
        request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                         json.dumps({"title": title, "body": ""}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            answers[title] = json.load(response)["number"]
        cache.write_text(json.dumps(answers))
    return answers[title]


def triage() -> None:
    done = Path(os.environ["CRASHLAB_RUN_DIR"]) / "done.json"
    filed = json.loads(done.read_text()) if done.exists() else {}
    for title in TITLES:
        if title not in filed:
            filed[title] = cached(title)
            done.write_text(json.dumps(filed))
