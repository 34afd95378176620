"""The chapter's five loop designs, as one loop with the three switches the chapter varies.

1. save once per turn: run every call of a reply, then save the turn. A crash before that save
   forgets the whole turn: the model is asked again and every call is made again.
2. save after the reply: the reply is durable before any tool runs, and each result is saved as it
   comes. A call whose result was not saved is made again on restart: the duplicate.
3. + idempotency keys: every changing request carries ``key(run, call)``; the tracker answers a
   repeated key from its record instead of acting twice.
4. + attempt markers, no keys: a marker is saved just before each changing request. A restart that
   finds a marker with no result does not know the outcome, and asks the person.
5. keys and markers: the same marker, but the request was keyed, so the restart simply repeats it.
"""

from __future__ import annotations

from dataclasses import dataclass

from crashlab import point
from crashlab.durable.checkpoint import TurnRecord
from crashlab.job import Call, Job, Turn
from crashlab.loops.keys import key
from crashlab.loops.life import Loop
from crashlab.loops.tools import invoke
from crashlab.protocols.run import Run
from crashlab.world import Failed, NoReply

#: How many times a design's client sends a request whose reply never came, or was a failure (5xx), as an HTTP
#: client's retry policy does.
TRIES = 3


@dataclass(frozen=True)
class Design:
    slug: str
    name: str
    saves_reply: bool  # save the reply before running its calls, and each result after it
    sends_keys: bool  # send key(run, call) with every changing request
    writes_markers: bool  # save an attempt marker before every changing request
    promises: bool = False  # it promises no duplicate, nothing lost, no wrong result and no question

    def entry(self, run: Run) -> None:
        """One process of the design: the chapter's tracker honours keys (those without simply send none)."""
        DesignLoop(self, run).run()

    def refuses(self, job: Job) -> str | None:
        """Why this design cannot run `job`: the chapter's designs model neither harder situation."""
        flagged = [c.id for c in job.calls if c.fails_after_accept or c.needs_approval]
        if not flagged:
            return None
        return (
            f"{job.source}: calls {', '.join(flagged)} use fails_after_accept or needs_approval, which only "
            "the agent's own loop handles: use --loop agent or an agent-* variant"
        )


DESIGNS: dict[str, Design] = {
    d.slug: d
    for d in (
        Design("per-turn", "save once per turn", saves_reply=False, sends_keys=False, writes_markers=False),
        Design("after-reply", "save after the reply", saves_reply=True, sends_keys=False, writes_markers=False),
        Design("keys", "+ idempotency keys", saves_reply=True, sends_keys=True, writes_markers=False),
        Design("markers", "+ attempt markers, no keys", saves_reply=True, sends_keys=False, writes_markers=True),
        Design("keys-markers", "keys and markers", saves_reply=True, sends_keys=True, writes_markers=True,
               promises=True),
    )
}

#: A design the book does not have, to show what a drifting model does to keys: once per turn, with
#: keys. A replayed model repeats its call IDs, so the keys rescue the repeated turn; a model that
#: names its calls anew makes new keys. Named by slug; `--variant all` stays the book's five.
BEYOND_THE_BOOK: dict[str, Design] = {
    "per-turn-keys": Design("per-turn-keys", "save once per turn, with keys", saves_reply=False, sends_keys=True,
                            writes_markers=False),
}


class DesignLoop(Loop):
    """One life of a process running a design: from loading the checkpoint to the end, or a crash."""

    def __init__(self, design: Design, run: Run):
        super().__init__(run)
        self.design = design

    def resume(self) -> None:
        if self.design.saves_reply and self.checkpoint.open_turn:
            self.finish_turn(resumed=True)

    def take_turn(self, number: int, reply: Turn) -> None:
        if self.design.saves_reply:
            self.checkpoint = self.checkpoint.with_turn(TurnRecord.reply(number, reply.calls))
            self.save()  # the reply is durable before any tool runs
            self.finish_turn(resumed=False)
        else:
            self.run_turn_then_save(number, reply)

    def run_turn_then_save(self, number: int, reply: Turn) -> None:
        """Design 1: every call of the reply, then one save. A crash before it loses the turn."""
        results = self.checkpoint.results()
        for call in reply.calls:
            self.process.at(number, call)
            results[call.id] = self.make_call(call, results)
        self.process.at(number)
        checkpoint = self.checkpoint.with_turn(TurnRecord.reply(number, reply.calls))
        for call in reply.calls:
            checkpoint = checkpoint.with_result(call.id, results[call.id])
        self.checkpoint = checkpoint.with_turn_closed()
        self.save()

    def finish_turn(self, resumed: bool) -> None:
        """Run each call of the last turn that has no saved result, in order, then close the turn."""
        turn = self.checkpoint.turns[-1]
        for call in turn.pending():
            self.process.at(turn.number, call)
            self.run_call(call, resumed)
        self.process.at(turn.number)
        self.checkpoint = self.checkpoint.with_turn_closed()
        self.save()

    def run_call(self, call: Call, resumed: bool) -> None:
        if resumed and call.id in self.checkpoint.turns[-1].markers:
            # A marker with no result: the request may or may not have reached the tracker.
            if self.design.sends_keys:
                self.process.note("decision", "rerun", call=call.id, why="the request is keyed")
            else:
                self.process.note("decision", "ask", call=call.id, why="no key: only the person can tell")
                answer = self.world.person.did_it_happen(call)
                if answer is not None:
                    self.save_result(call, answer)
                    return
        elif self.design.writes_markers and call.changes:
            self.checkpoint = self.checkpoint.with_marker(call.id, self.world.clock.hours)
            self.save()
            point("marker-saved")
        self.save_result(call, self.make_call(call, self.checkpoint.results()))

    def make_call(self, call: Call, results: dict) -> object:
        """Send the call (with its key, in a keyed design), and resend it while no reply comes back or the reply is
        a failure; the last failure is the call's result, as a tool reports an error to the model."""
        sent_key = key(self.checkpoint.run, call.id) if self.design.sends_keys and call.changes else None
        for attempt in range(1, TRIES + 1):
            try:
                result = invoke(self.world, call, results, sent_key)
                break
            except Failed as failure:
                if attempt == TRIES:
                    result = f"failed: {failure}"
                    break
                self.process.note("retry", call.tool, call=call.id, why="the reply was a failure: the client resends")
            except NoReply:
                if attempt == TRIES:
                    raise
                self.process.note("retry", call.tool, call=call.id, why="no reply came back: the client resends")
        point("returned")
        return result
