"""A variant: one loop under test, as the registry holds it, with every attribute the rest of crashlab asks of it.

Everything that differs between loops is an attribute here (its entry point, its tracker, what it
promises, which table it fills, which runners can run it), so no other module keeps a list of
loops in step with this one by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from crashlab.job import TOOLS, Call, Job
from crashlab.protocols.run import Entry, Program
from crashlab.world import DeskMode, TrackerMode
from crashlab.world.effects import Effect, of_job

#: The runners there are: in this process, each crash an exception (`crashlab.runners.inprocess`), or
#: each process forked and killed for real (`crashlab.runners.forked`).
RunnerKind = Literal["in-process", "forked"]
#: Which table a variant's row belongs in: the book's columns, the agent's (with approvals), or a
#: loop of yours (whose checkpoint crashlab cannot read, so it has no wrong or stuck runs).
Table = Literal["book", "agent", "loop"]


@dataclass(frozen=True)
class Promises:
    """What a loop promises in every scenario: no duplicate, nothing lost, no wrong result, and no
    question to a person unless `may_ask` (its tracker can neither honour a key nor be asked about one)."""

    may_ask: bool = False
    approvals_once: bool = False  # each gated call's approval is asked exactly once


def accepts_every_job(job: Job) -> str | None:
    return None


@dataclass(frozen=True)
class Variant:
    """One row of a table: a loop, run as `entry`, against a tracker that does `tracker` with keys."""

    slug: str
    name: str
    family: str  # whose loop: "designs", "agent", a framework's name, or the name you gave yours
    entry: Entry
    tracker: TrackerMode = "keyed"
    desk: DeskMode = "remembers"  # whether the approval desk keeps questions and decisions across a crash
    promises: Promises | None = None  # None: it is there to show what goes wrong
    table: Table = "agent"
    runners: frozenset[RunnerKind] = frozenset({"in-process", "forked"})
    keeps_checkpoint: bool = True  # its progress is crashlab's checkpoint, which the harness can read
    #: All it keeps outlives a death in its run directory, beside the world crashlab holds: so a copy of them
    #: is what a death leaves, and a sweep killed for real may restart from copies (`runners.forked.shares`).
    kept_in_directory: bool = True
    #: `kept_in_directory` on its author's word alone (a loop of yours, `--state-in-run-dir`): each shared sweep
    #: checks it before it trusts it (`crashlab.engine.copies`).
    on_its_word: bool = False
    #: Columns of its databases that it stamps with a clock or a random ID and never acts on, as (table, column):
    #: left out of its durable state's content, so states equal but for them are one (`crashlab.durable.content`).
    volatile: frozenset[tuple[str, str]] = frozenset()
    #: A pattern of the values it mints afresh in each process (random IDs, clock readings) and acts on only by
    #: equality and order: renamed in its durable state's content, so states equal up to them are one.
    minted: bytes = b""
    in_all: bool = True  # one of its family's variants that `--variant all` names
    effects: tuple[str, ...] | None = None  # what it means to do once each, if not the job's changing calls
    #: A loop whose tools call crashlab's service (`crashlab.service`): the effects it means, by what they
    #: are. Empty for a loop that acts through `run.world`, or whose effects are its job's (`serves_job`).
    service: tuple[Effect, ...] = ()
    serves_job: bool = False  # its tools call the service to make the job's calls (a framework's loop)
    #: A service of yours in place of crashlab's (`crashlab.service.yours.YourService`): its tools call it.
    stands_in: Any = None
    refuses: Callable[[Job], str | None] = accepts_every_job  # why it cannot run a job, or None
    extra: str = ""  # the pip extra its framework comes in, if it has one
    #: Its threads take turns, in an order the harness decides (`crashlab.protocols.schedule`): a loop that runs
    #: its tool calls on a thread pool. Off for every other loop, whose own waits (an event loop's, a lock's)
    #: the scheduler cannot see and would deadlock on.
    scheduled: bool = False
    #: A program's file operations in its run directory are crash points too (every fsync, fdatasync, rename,
    #: unlink and close after a write), told by the file-system layer it runs on (`crashlab.durable.fuse`).
    fs_points: bool = False

    def cannot_run(self, job: Job) -> str | None:
        """Why it cannot run `job`, or None: a tool of a program's own, which only a program (``--command``) can
        call, crashlab's loops calling crashlab's; else its own reason (`refuses`)."""
        if job.own_tools and not isinstance(self.entry, Program):
            return (f"{job.source}: it calls {job.own_tools[0]!r}, a tool of a program's own, which only a program "
                    f"(--command) runs: {self.slug} calls crashlab's tools ({', '.join(TOOLS)})")
        return self.refuses(job)

    @property
    def calls_service(self) -> bool:
        """Whether its tools call crashlab's service, which a sweep then starts for it."""
        return (bool(self.service) or self.serves_job) and self.stands_in is None

    def recognised(self, job: Job) -> tuple[Effect, ...]:
        """The effects the service's records are recognised as: declared, or the job's calls by what they make."""
        return self.service or of_job(job)

    def intended(self, job: Job) -> tuple[Call, ...]:
        """The effects the run means to have, each exactly once."""
        if self.effects is None:
            return job.changing_calls
        return tuple(Call(effect, "create_issue", {}) for effect in self.effects)
