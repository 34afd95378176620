"""The runner protocol: what runs one life of a loop and says how it ended, and what opens one.

The engine is handed a `Runners`, a plain value that can be opened anywhere (here, in a pool's worker,
on a Dask worker) into a `Runner`, and asks nothing else of it: which runner it is, in process or
forked, is the concern of whoever composed the sweep (`crashlab.runners.RunnerSpec`, for the command
line, the API and the pytest fixture).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from crashlab.protocols.death import Choice, Left
from crashlab.protocols.scenario import ScenarioRun, Setup
from crashlab.protocols.variant import RunnerKind

#: How long one process of a scenario that runs for real may run, in seconds, before the harness kills it
#: (``--time-limit``): a restart that hangs is stuck, a first run that hangs fails the sweep. A DBOS
#: process, the slowest here, takes about a second.
TIME_LIMIT = 60.0


class Runner(Protocol):
    """Runs a scenario's processes, one life each, and reports what each did (its points, its events)."""

    kind: RunnerKind

    def scenario(self, setup: Setup, crashes: tuple[int, ...], choices: tuple[Choice, ...] = (),
                 watch: bool = False) -> ScenarioRun:
        """Run the scenario from nothing: process k dies at its ``crashes[k-1]``-th point, leaving the state
        ``choices[k-1]`` names; with `watch`, note the states a death at each point of the last could leave."""

    def life(self, setup: Setup, start: Left | None, crashes: tuple[int, ...], choices: tuple[Choice, ...],
             watch: bool) -> ScenarioRun:
        """One life, from the state `start` (None: the first process), the last of scenario `crashes`."""


class Runners(Protocol):
    """What the engine is handed: which runner to open, as a value that every worker can open for itself."""

    @property
    def kind(self) -> RunnerKind: ...

    def check(self, setup: Setup) -> None:
        """Refuse, in one line, a setup this runner cannot run (a fault that needs what it does not offer)."""

    def shares(self, setup: Setup) -> bool:
        """Whether it starts `setup`'s restarts from snapshots of what each death left, so equal states share one."""

    def open(self) -> AbstractContextManager[Runner]:
        """The runner, open for as long as the block runs."""
