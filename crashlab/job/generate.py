"""Random small jobs in the YAML schema: what the property tests draw, and what `crashlab campaign` sweeps.

One generator serves both, so a campaign's job is one the tests could have drawn. It builds the
job as the YAML would say it (a plain mapping), so a job that breaks a guarantee can be written to
a file, read back with `load_job` and explained like any other.
"""

from __future__ import annotations

import random
import string
from typing import Any

TOOLS = ("create_issue", "comment", "search")
TITLES = ("login", "crash", "login fails")
QUERIES = ("login", "nothing")
_FIRST = string.ascii_letters
_REST = string.ascii_letters + string.digits + "_.-"


def job_spec(rng: random.Random, max_turns: int = 2, max_calls: int = 3, harder: bool = False,
             name: str = "generated") -> dict[str, Any]:
    """A job of up to `max_turns` replies of up to `max_calls` calls each, then the answer.

    Call IDs are short and unlike the triage job's one-letter ones. Comments target an issue created
    earlier in the job or a fixed number; with `harder`, any call may also fail after the tracker
    accepted it, or wait for an approval.
    """
    shape = [[rng.choice(TOOLS) for _ in range(rng.randint(1, max_calls))] for _ in range(rng.randint(1, max_turns))]
    ids: set[str] = set()
    while len(ids) < sum(map(len, shape)):
        ids.add(rng.choice(_FIRST) + "".join(rng.choice(_REST) for _ in range(rng.randint(0, 6))))
    fresh = iter(sorted(ids, key=lambda _: rng.random()))
    created: list[str] = []
    turns = []
    for tools in shape:
        calls = []
        for tool in tools:
            call: dict[str, Any] = {"id": next(fresh), "tool": tool}
            if tool == "create_issue":
                call["args"] = {"title": rng.choice(TITLES), "body": "b"}
                created.append(call["id"])
            elif tool == "comment":
                call["args"] = {"issue": rng.choice([f"${c}" for c in created] + [1]), "body": "b"}
            else:
                call["args"] = {"query": rng.choice(QUERIES)}
            if harder:
                call["fails_after_accept"] = rng.random() < 0.5
                call["needs_approval"] = rng.random() < 0.5
            calls.append(call)
        turns.append({"calls": calls})
    return {"name": name, "turns": [*turns, {"answer": "done"}]}
