"""Runners: what runs one life of a loop, and says how it ended. A folder of them, one seam
(`crashlab.protocols.runner` is the protocol they implement).

In process (`inprocess`), a crash is an exception no loop can catch and no dead process can act
after; the runner snapshots what each death leaves, so restarts share their prefixes, and it can
swap the world's parts for a fault's. Forked (`forked`), every process is a real one, forked from a
warm parent and killed by SIGKILL at its point. Each declares what it can offer; a fault declares
what it needs; a sweep that asks for what no runner offers is refused in one line.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from crashlab.durable.store import StoreKind
from crashlab.errors import BadInput
from crashlab.profiles import DEFAULT
from crashlab.protocols.runner import TIME_LIMIT, Runner
from crashlab.protocols.scenario import Setup
from crashlab.protocols.variant import RunnerKind

#: What each runner offers a fault: the world's parts in memory, to swap and restore from a value; a
#: model of the page cache under the checkpoint store; snapshots of what each death leaves.
OFFERS: dict[RunnerKind, frozenset[str]] = {
    "in-process": frozenset({"world-in-memory", "page-cache", "snapshots"}),
    "forked": frozenset({"real-death"}),
}
#: What each runner is called on the command line, for the errors that refuse a combination.
CALLED = {"in-process": "the in-process runner", "forked": "the forked runner (--kill)"}


@dataclass(frozen=True)
class RunnerSpec:
    """Which runner, and where its checkpoints go: a plain value, so that every worker opens its own (the
    engine's `crashlab.protocols.runner.Runners`)."""

    kind: RunnerKind = "in-process"
    store: StoreKind = "memory"
    limit: float = TIME_LIMIT  # seconds a real process may run (forked only)

    @property
    def offers(self) -> frozenset[str]:
        return OFFERS[self.kind]

    def check(self, setup: Setup) -> None:
        check_runs(setup, self)

    def shares(self, setup: Setup) -> bool:
        """Whether this runner starts `setup`'s restarts from snapshots of what each death left, so that equal
        states share one restart: in process, always; forked, where a copy of the run directory is all of it."""
        if self.kind == "forked":
            from crashlab.runners.forked import shares

            return shares(setup)
        return "snapshots" in self.offers

    @contextmanager
    def open(self) -> Iterator[Runner]:
        """The runner, open for as long as the block runs; a disk that fills under it is refused in one line.

        Its files (checkpoints, worlds, services) live in scratch space, /dev/shm where there is one;
        a full one fails wherever a write happens to be, here, in a worker or in a forked process.
        """
        try:
            if self.kind == "forked":
                from crashlab.runners.forked import Forked

                with Forked.opened(self.limit) as forked:
                    yield forked
            else:
                from crashlab.runners.inprocess import InProcess

                with InProcess.opened(self.store) as runner:
                    yield runner
        except OSError as error:
            if error.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            where = error.filename or "on /dev/shm, or in the temporary directory where there is none"
            raise BadInput(f"no space left for the sweep's scratch files ({where}): {error.strerror}; free some, or "
                           "sweep in memory (without --store files or --kill)") from None


def check_runs(setup: Setup, spec: RunnerSpec) -> None:
    """Refuse, in one line, a sweep that asks a runner for what it cannot do."""
    variant, faults = setup.variant, setup.faults
    if spec.kind not in variant.runners:
        only = " or ".join(CALLED[kind] for kind in sorted(variant.runners))
        why = " (a framework catches, retries or saves a raised exception, so only SIGKILL is a death there)" \
            if variant.extra else ""
        raise BadInput(f"{variant.slug} runs only under {only}{why}")
    if variant.scheduled and (untried := [f.slug for f in faults.members if not f.schedules_threads]):
        raise BadInput(f"--fault {untried[0]}: {variant.slug}'s threads are scheduled by the harness, which has not "
                       "been checked to repeat itself under that fault (under timeout it hung): sweep it under "
                       "crash or interleave")
    if variant.stands_in is not None:
        if setup.profile != DEFAULT:
            raise BadInput(f"--profile {setup.profile}: a service of yours keeps its own idempotency contract, which "
                           "crashlab does not set: sweep it without --profile")
        if faults:
            raise BadInput(f"--fault {faults.members[0].slug}: crashlab breaks only what it runs, and a service of "
                           "yours it does not run: sweep it under the crash alone")
        return
    if variant.calls_service:  # its world is crashlab's service, and a fault breaks the service, not a world in memory
        if faults.serving().model_ids != "stable" and not setup.plays_model:
            raise BadInput(f"--fault drifting-model drifts the model crashlab's service plays to a program (--command "
                           f"with --job): {variant.slug} asks it nothing")
        if cutting := next((f for f in faults.members if f.cuts), None):
            from crashlab.durable.fuse import unusable

            if unable := unusable():
                raise BadInput(f"--fault {cutting.slug} cuts a loop's run directory on a FUSE layer, and here {unable}")
        return
    missing = faults.needs - spec.offers
    if missing:
        fault = next(f for f in faults.members if f.needs - spec.offers)
        able = [CALLED[kind] for kind, offers in OFFERS.items() if fault.needs <= offers and kind in variant.runners]
        instead = f"; {able[0]} does" if able else f", and {variant.slug} runs under no runner that does"
        raise BadInput(f"--fault {fault.slug} needs {', '.join(sorted(missing))}, which {CALLED[spec.kind]} does not "
                       f"offer{instead}")
