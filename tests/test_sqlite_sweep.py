"""The agent's loop cannot tell the SQLite world from the in-memory one: same events, same table.

Each scenario of the sweep gets a fresh database file (on /dev/shm when there is one), and the in-process
runner builds its worlds there instead of in memory. Nothing else changes.
"""

import itertools
import shutil
import tempfile
from pathlib import Path

import pytest

from crashlab.job import load_job
from crashlab.runners import inprocess
from crashlab.world import TRACKER_MODES, Parts
from crashlab.world.sqlite import Database, open_world

from .conftest import SCENARIOS
from .helpers import scenario, swept


@pytest.fixture
def sqlite_worlds(monkeypatch):
    """Make the in-process runner build every scenario's world in a fresh database file; undo it after."""
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="crashlab-test-", dir=shm if shm.is_dir() else None))
    numbers = itertools.count()
    opened: list[Database] = []

    class SqliteWorlds:
        @staticmethod
        def new(job, points, tracker_mode="keyed", approves=True, desk="remembers", parts=None, profile="ietf"):
            assert (approves, desk, parts) == (True, "remembers", Parts())  # no fault's parts: as a database keeps them
            opened.append(Database(root / f"{next(numbers)}.sqlite"))
            return open_world(opened[-1], job, points, tracker_mode, profile=profile)

    def install() -> list[Database]:
        monkeypatch.setattr(inprocess, "World", SqliteWorlds)
        return opened  # the databases made so far: the runner did build its worlds there

    yield install
    monkeypatch.undo()
    for db in opened:
        db.close()
    shutil.rmtree(root, ignore_errors=True)


def story(run):
    """Everything a scenario's recorder saw, and what its world holds at the end."""
    events = [(e.process, e.kind, e.label, e.where, e.index, e.detail) for e in run.points.events]
    world = run.world
    return events, world.tracker.records, world.person.asks, world.person.approvals, world.model.calls


#: The fast suite's share: the triage job under every tracker, and each harder job under one.
FAST = {("triage", mode) for mode in TRACKER_MODES} | {("approval", "keyed"), ("server-dies", "keyless")}
SINGLE = [
    pytest.param(name, mode, marks=() if (name, mode) in FAST else pytest.mark.slow)
    for name in ("triage", "approval", "server-dies") for mode in TRACKER_MODES
]


@pytest.mark.parametrize(("name", "mode"), SINGLE)
def test_every_single_crash_tells_the_same_story_on_both_worlds(sqlite_worlds, name, mode):
    job, agent = load_job(SCENARIOS / f"{name}.yaml"), f"agent-{mode}"
    n = scenario(agent, job, ()).passed(1)
    in_memory = [story(scenario(agent, job, crashes)) for crashes in [(), *((i,) for i in range(1, n + 1))]]
    databases = sqlite_worlds()
    on_disk = [story(scenario(agent, job, crashes)) for crashes in [(), *((i,) for i in range(1, n + 1))]]
    assert len(databases) == n + 1  # one database per scenario
    assert on_disk == in_memory


@pytest.mark.slow
@pytest.mark.parametrize("mode", TRACKER_MODES)
def test_the_whole_agent_sweep_of_triage_gives_the_same_rows_on_both_worlds(sqlite_worlds, mode):
    job, agent = load_job(SCENARIOS / "triage.yaml"), f"agent-{mode}"
    in_memory = swept(agent, job)
    databases = sqlite_worlds()
    on_disk = swept(agent, job, share=False)  # re-executed: every process on its database
    assert len(databases) >= on_disk.row().scenarios  # one database per scenario run, at least
    assert on_disk.row() == in_memory.row()
    assert list(on_disk.scenarios()) == list(in_memory.scenarios())  # every scenario's outcome, not only the sums
