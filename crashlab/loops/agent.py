"""crashlab's recommended durable loop: the one to copy into your own agent.

Four rules make it safe to kill at any instant:

1. Save the model's reply before running any tool. Every call then has a fixed ID before it goes
   out, and a restart sees which calls already have results.
2. Send ``key(run, call)`` with every changing request. The run ID is fresh for every new run and
   lives in the checkpoint, so a resumed run keeps its own and every retry carries the same key.
3. Save an attempt marker, with the time it was written, just before every changing request.
4. On restart, a marker with no result means the outcome is unknown. Settle it on the resolution
   ladder: run it again if a repeat is harmless (a keyed repeat only while the receiver still holds
   the key: the marker is younger than the key retention the tool declares); else ask the receiver
   whether it happened; only then ask the person. The rung is saved before the loop acts on it.
   A receiver that fences answers "no" once and for all: the key is retired, so a request still on
   the wire is refused when it lands, and the resend goes out under the call's next key, which is
   saved before it leaves.

Two harder situations are handled by the same rules: a request whose outcome the loop cannot know
(its tool's server died after the tracker accepted it, or no reply came back: an `UnknownOutcome`,
which goes to the ladder, neither retried blindly nor given up on), and a call that waits for a
person's approval (asked through the approval desk, by key, and saved, so no restart asks for it
again).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from crashlab import point
from crashlab.durable.checkpoint import Checkpoint, TurnRecord
from crashlab.job import Call, Turn
from crashlab.loops.keys import key
from crashlab.loops.life import Loop
from crashlab.loops.tools import ToolSpec, invoke, toolbox
from crashlab.protocols.run import Run
from crashlab.world import DeskMode, Failed, TrackerMode, UnknownOutcome

# The rungs of the resolution ladder, in the order they are tried.
RERUN = "rerun"  # a repeat is harmless: send it again
LOOKUP = "lookup"  # ask the receiver whether the keyed request happened
ASK = "ask"  # ask the person


def ladder(tool: ToolSpec, age: float = 0.0) -> tuple[str, str]:
    """The first rung that can settle an unknown outcome of a call to `tool`, attempted `age` hours ago, and why."""
    if tool.read_only:
        return RERUN, "the tool only reads: a repeat is harmless"
    if tool.idempotent:
        return RERUN, "the tool is idempotent: a repeat is harmless"
    if tool.honours_keys and (tool.key_retention is None or age < tool.key_retention):
        return RERUN, "the request was keyed and the receiver still holds the key: a repeat changes nothing"
    if tool.honours_keys:  # the key is older than the receiver keeps keys
        expired = f"the key may have expired (the marker is {age:g} h old, keys are kept {tool.key_retention:g} h)"
        if tool.supports_lookup:
            return LOOKUP, f"{expired}, but the receiver can say whether the keyed request happened"
        return ASK, f"{expired} and the receiver cannot be asked: only the person can tell"
    if tool.supports_lookup and tool.fences_lookups:
        return LOOKUP, ("the receiver can say whether the keyed request happened, and fences the key if not: "
                        "a late arrival under it is refused")
    if tool.supports_lookup:
        return LOOKUP, "the receiver can say whether the keyed request happened"
    return ASK, "no key is honoured and the receiver cannot be asked: only the person can tell"


class AgentLoop(Loop):
    """One life of the agent's process, from loading its checkpoint to the end, or a crash."""

    def __init__(self, run: Run, tools: dict[str, ToolSpec], new_run_id: Callable[[], str]):
        super().__init__(run)
        self.tools = tools
        self.new_run_id = new_run_id

    def new_run(self) -> Checkpoint:
        return Checkpoint.new(self.new_run_id())  # rule 2: fresh, and durable before any request carries it

    def resume(self) -> None:
        if self.checkpoint.open_turn:
            self.finish_turn()

    def take_turn(self, number: int, reply: Turn) -> None:
        self.checkpoint = self.checkpoint.with_turn(TurnRecord.reply(number, reply.calls))
        self.save()  # rule 1: the reply is durable before any tool runs
        self.finish_turn()

    def finish_turn(self) -> None:
        turn = self.checkpoint.turns[-1]
        for call in turn.pending():
            self.process.at(turn.number, call)
            self.run_call(call)
        self.process.at(turn.number)
        self.checkpoint = self.checkpoint.with_turn_closed()
        self.save()

    def run_call(self, call: Call) -> None:
        if call.ref is not None and not isinstance(self.checkpoint.results()[call.ref], int):
            self.save_result(call, f"not made: call {call.ref} made no issue")  # refused: nothing to comment on
        elif call.needs_approval and not self.approved(call):
            self.save_result(call, "refused by the person")
        elif call.id in self.checkpoint.turns[-1].markers:
            self.settle(call)  # rule 4: a marker with no result, the outcome is unknown
        else:
            if call.changes:
                self.checkpoint = self.checkpoint.with_marker(call.id, self.world.clock.hours)
                self.save()  # rule 3: the attempt is on disk before the request leaves
                point("marker-saved")
            self.send_and_save(call)

    def approved(self, call: Call) -> bool:
        """The person's decision on a gated call: from the checkpoint, else from the approval desk."""
        approvals = self.checkpoint.turns[-1].approvals
        if call.id in approvals:
            return approvals[call.id]
        decision = self.world.desk.approve(call, self.key(call))
        self.checkpoint = self.checkpoint.with_approval(call.id, decision)
        self.save()
        point("approval-saved")
        return decision

    def settle(self, call: Call, failed: bool = False) -> None:
        """The resolution ladder: find out what became of a call whose outcome is unknown.

        A saved rung stands, but for a rerun whose key the receiver may no longer hold: the marker
        has aged past the retention since, and the call goes down the ladder. So does a rerun that
        was answered with a failure (`failed`) again: a receiver that keeps a failure under its key
        (Stripe v1) answers every rerun with it, and only a lookup or the person can tell.
        """
        saved = self.checkpoint.turns[-1].decisions.get(call.id)
        tool = self.tools[call.tool]
        rung, why = ladder(tool, self.marker_age(call))
        if failed and saved == RERUN:
            rung = LOOKUP if tool.supports_lookup else ASK
            why = "the rerun under the key was answered with a failure again: rerunning cannot settle it"
        if saved is None or (saved == RERUN and rung != RERUN):
            self.process.note("decision", rung, call=call.id, why=why)
            self.checkpoint = self.checkpoint.with_decision(call.id, rung)
            self.save()  # the rung is durable before the loop acts on it
            point("decision-saved")
        else:
            rung = saved
            self.process.note("decision", rung, call=call.id, why="resumed from the checkpoint")
        found = None
        if rung == LOOKUP:
            found = self.world.tracker.lookup(self.key(call))
        elif rung == ASK:
            found = self.world.person.did_it_happen(call)
        if found is not None:
            self.save_result(call, found)  # it happened: keep its answer, do not send it again
            return
        if rung == LOOKUP and self.tools[call.tool].fences_lookups:
            self.checkpoint = self.checkpoint.with_fenced(call.id)
            self.save()  # the key is retired: the resend's new key is durable before it leaves
            point("fence-saved")
        self.send_and_save(call)

    def marker_age(self, call: Call) -> float:
        """Hours since the call's attempt marker was written: at least the age of its key at the receiver."""
        now = self.world.clock.hours
        return now - self.checkpoint.turns[-1].markers.get(call.id, now)

    def send_and_save(self, call: Call) -> None:
        try:
            result = invoke(self.world, call, self.checkpoint.results(), self.key(call) if call.changes else None)
        except Failed:
            self.settle(call, failed=True)  # a 5xx: the tracker may have made the effect before it failed
            return
        except UnknownOutcome:
            self.settle(call)  # the tracker may have acted, and the loop cannot tell: the outcome is unknown
            return
        point("returned")
        self.save_result(call, result)

    def key(self, call: Call) -> str:
        return key(self.checkpoint.run, call.id, self.checkpoint.turns[-1].generation(call.id))


@dataclass(frozen=True)
class Agent:
    """The agent's loop against one kind of tracker: a row of the agent sweep."""

    tracker: TrackerMode
    #: Whether the approval desk keeps questions and decisions across a crash (see world.ApprovalDesk).
    desk: DeskMode = "remembers"
    #: Whether a new run draws its ID at random, as a real agent does (`crashlab run`), or makes it of the
    #: job's run name and the process that started it, so that sweeps repeat themselves.
    random_ids: bool = False

    @property
    def slug(self) -> str:
        return f"agent-{self.tracker}"

    @property
    def name(self) -> str:
        return f"agent loop, {self.tracker} tracker"

    def entry(self, run: Run) -> None:
        """One process of the agent."""
        new_run_id = (lambda: uuid.uuid4().hex) if self.random_ids else (lambda: f"{run.job.run}.p{run.process}")
        AgentLoop(run, toolbox(self.tracker), new_run_id).run()
