"""A loop's threads, taking turns where the harness decides: what every runner does for a scheduled loop."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from crashlab.protocols.points import Recorder
from crashlab.protocols.scenario import Setup
from crashlab.protocols.schedule import scheduling


def turns(setup: Setup, points: Recorder) -> AbstractContextManager[object]:
    """For a loop whose variant runs tool calls on a thread pool (`Variant.scheduled`), its threads taking turns
    as the harness decides, in the schedule its faults name for this process; any other loop's, as they run."""
    if not setup.variant.scheduled:
        return nullcontext()
    picks, first = setup.faults.schedule(points.process)
    return scheduling(picks, points.note, first)
