"""Two loops of yours that save each request's fresh key on a helper thread: one races, one does not.

Each files two issues through crashlab's service over plain HTTP, under an Idempotency-Key it makes
at random (a new one in every run) and saves in its folder on a helper thread. `racy` sends the
request while the helper is still saving: a death after the service committed finds the key on
disk or not, as the race went, and its restart resends under the saved key (no harm) or makes a
new one (a duplicate). Which way it goes is a coin (`os.urandom`: a forked child inherits the
parent's `random` state, so `random` would throw the same every time). `steady` waits for the
helper before it sends, so every restart finds the key.

A sweep must find `racy` flaky and `steady` not. Their keys differ in every run, so only a check
that names a key by its first use in the scenario can hold `steady`'s runs to be the same run.
Both find the service in ``CRASHLAB_TRACKER_URL`` and their folder in ``CRASHLAB_RUN_DIR``:
`crashlab.api.sweep(racy, EFFECTS)` and ``crashlab sweep --loop tests/racy_loop.py:racy`` alike.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import crashlab

EFFECTS = {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"}}
#: How long a helper that loses the race takes to save the key: well past the service's commit.
LATE = 0.05


def replace(path: Path, text: str) -> None:
    """Write `path` whole, through a temporary file: a death leaves the old text or the new."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def save_key(path: Path, key: str, late: bool) -> None:
    time.sleep(LATE if late else 0)
    replace(path, key)


def create_issue(title: str, key: str) -> int:
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                     json.dumps({"title": title, "body": ""}).encode(),
                                     {"Content-Type": "application/json", "Idempotency-Key": key})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["number"]


def triage(races: bool) -> None:
    folder = Path(os.environ["CRASHLAB_RUN_DIR"])
    progress = folder / "progress.json"
    done = json.loads(progress.read_text()) if progress.exists() else {}
    for step, effect in EFFECTS.items():
        if step in done:
            continue
        kept = folder / f"{step}.key"
        key = kept.read_text() if kept.exists() else uuid.uuid4().hex
        saver = threading.Thread(target=save_key, args=(kept, key, races and os.urandom(1)[0] < 128))
        saver.start()
        if not races:
            saver.join()
        done[step] = create_issue(effect["issue"], key)
        crashlab.point("answered")
        saver.join()
        replace(progress, json.dumps(done))
        crashlab.point("saved")


def racy() -> None:
    triage(races=True)


def steady() -> None:
    triage(races=False)
