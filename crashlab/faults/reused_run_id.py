"""`reused-run-id`: the run starts under the run ID of an earlier run of the same job.

Before the scenario, an earlier run (yesterday's triage) ran to the end under the run ID this one
starts with, and the scripted model repeats its call IDs, so a loop that reuses the run ID sends
yesterday's keys. A keyed tracker answers them from yesterday's records: today's effects are
missing while the loop believes them done (and counts them wrong). The agent's loop draws a fresh
run ID per run. Only today's records, questions and model calls are counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from crashlab.protocols.fault import Fault
from crashlab.world import WorldState


class ReusedRunId(Fault):
    slug = "reused-run-id"
    breaks = ("the run starts with the run ID of an earlier run of the same job, which already ran to the end with "
              "the same call IDs: a reused run ID makes the earlier run's keys")
    adds = "every crash scenario, after the earlier run; only this run's records count"

    def begin(self, earlier: Callable[[], WorldState]) -> WorldState:
        """The world an earlier, uninterrupted run of the job left: its records and keys, none of its counts."""
        left = earlier()
        return replace(left, asks=0, approvals=0, model_calls=0, servers_died=(), earlier=len(left.records))
