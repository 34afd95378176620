"""One life of a loop's process: the part every design and the agent's own loop live the same way.

A process loads the checkpoint (a finished run exits at once), saves it back as its start save,
resumes whatever the checkpoint left open, then asks the model for one turn after another until
the final answer is saved. What differs between loops is how a turn is taken and how an open one
is resumed; each loop says that in `take_turn` and `resume`.
"""

from __future__ import annotations

from typing import Any

from crashlab import point
from crashlab.durable.checkpoint import Checkpoint
from crashlab.job import Call, Turn
from crashlab.protocols.run import Run


class Loop:
    def __init__(self, run: Run):
        self.process = run
        self.job = run.job
        self.world = run.world
        self.store = run.store
        self.checkpoint = Checkpoint.new(run.job.run)

    def run(self) -> None:
        loaded = self.store.load()
        if loaded is not None and loaded.finished:
            return
        self.checkpoint = loaded or self.new_run()
        self.save()  # the start save: every process makes one, restarts too
        self.resume()
        while not self.checkpoint.finished:
            number = self.checkpoint.next_turn
            self.process.at(number)
            reply = self.world.model.reply(number)
            point("reply")
            if reply.is_final:
                self.checkpoint = self.checkpoint.with_answer(reply.answer or "")
                self.save()
            else:
                self.take_turn(number, reply)

    def new_run(self) -> Checkpoint:
        """The checkpoint of a run that has nothing on disk yet."""
        return Checkpoint.new(self.job.run)

    def resume(self) -> None:
        """Finish what the loaded checkpoint left open, before asking the model anything."""

    def take_turn(self, number: int, reply: Turn) -> None:
        raise NotImplementedError

    def save_result(self, call: Call, result: Any) -> None:
        self.checkpoint = self.checkpoint.with_result(call.id, result)
        self.save()
        point("result-saved")

    def save(self) -> None:
        self.store.save(self.checkpoint)
