"""A hand-written loop, swept through crashlab's public API: without keys a kill duplicates, with keys it cannot.

Run it with ``python examples/hand_written_loop.py``. The loop files two issues and comments on the
first, saving its progress in a JSON file after each step, and marks where it can die with
`crashlab.point`. Killed for real at every point (and its restart at every point too), it
duplicates whenever it dies after the tracker accepted a request and before it saved the result;
sending a key made of its run ID and step makes every repeat harmless.
"""

import json
from functools import partial

import crashlab
from crashlab.api import Run, sweep

STEPS = [
    ("A", "issue", "Login fails on Safari"),
    ("B", "issue", "Export times out"),
    ("C", "comment", "Same root cause"),
]


def triage(run: Run, keyed: bool) -> None:
    saved = run.directory / "progress.json"
    done = json.loads(saved.read_text()) if saved.exists() else {}
    for step, kind, text in STEPS:
        if step in done:
            continue
        key = f"triage-1:{step}" if keyed else None
        if kind == "issue":
            done[step] = run.tracker.create_issue(step, text, key=key)
        else:
            done[step] = run.tracker.comment(step, done["A"], text, key=key)
        crashlab.point("returned")
        saved.with_suffix(".tmp").write_text(json.dumps(done))
        crashlab.point("written")
        saved.with_suffix(".tmp").replace(saved)
        crashlab.point("saved")


if __name__ == "__main__":
    for keyed in (False, True):
        result = sweep(partial(triage, keyed=keyed), ["A", "B", "C"], name="keyed" if keyed else "plain", depth=2)
        row = result.row()
        print(f"{result.name}: {row.scenarios} scenarios, {row.with_dups} with dups, {row.dups} dups, "
              f"{row.missing} missing, {row.flaky} flaky, {row.windows} failure windows")
        for line in result.failures()[:3]:
            print("  ", line)
