"""The model the loop calls: scripted, so every run of a scenario hears the same replies."""

from __future__ import annotations

from typing import Any

from crashlab.job import Job, Turn
from crashlab.protocols.points import Recorder


class Model:
    """The scripted model: asked for turn k, it gives the job's reply k, and counts every call.

    Asked again for a turn, it repeats the call IDs, as a replayed model does. A model that answers
    otherwise (one that names its calls anew) overrides `answer`, and keeps what it must remember
    between calls in `state`, which a restart gets back with the rest of the world.
    """

    def __init__(self, points: Recorder, job: Job):
        self.points = points
        self.job = job
        self.calls = 0

    def reply(self, turn: int) -> Turn:
        """The reply that opens `turn` (1-based)."""
        self.points.guard("a model call made")
        self.calls += 1
        reply = self.answer(turn)
        summary = f"answer {reply.answer!r}" if reply.is_final else " ".join(c.id for c in reply.calls)
        self.points.note("model", "reply", call_count=self.calls, reply=summary)
        return reply

    def answer(self, turn: int) -> Turn:
        return self.job.turns[turn - 1]

    def state(self) -> Any:
        """What the model remembers from one call to the next: nothing, for a scripted one."""
        return ()

    def restore(self, state: Any) -> None:
        """Remember `state` again, as a restart finds it."""
