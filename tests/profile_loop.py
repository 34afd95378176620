"""A loop of yours that files two issues under keys of 43 characters: its run's name and the step's.

It imports nothing of crashlab's but `crashlab.point`: it calls `run.tracker` and keeps its progress
in its run directory. A receiver that takes keys of at most 40 characters (Worldline) refuses every
request, and the loop saves the refusal as the step's result; under the draft's 255 it files both.
"""

from __future__ import annotations

import json

import crashlab

STEPS = {"A": "Login fails on Safari", "B": "Export times out"}
RUN = "nightly-triage-of-the-support-inbox-run-1"  # with ":A", 43 characters: past Worldline's 40


def triage(run) -> None:
    saved = run.directory / "progress.json"
    done = json.loads(saved.read_text()) if saved.exists() else {}
    for step, title in STEPS.items():
        if step in done:
            continue
        try:
            done[step] = run.tracker.create_issue(step, title, key=f"{RUN}:{step}")
        except Exception as refusal:  # a 4xx: the receiver made nothing, and says why
            done[step] = str(refusal)
        crashlab.point("returned")
        saved.write_text(json.dumps(done))
        crashlab.point("saved")
