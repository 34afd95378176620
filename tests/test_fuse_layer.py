"""The power-cut layer (`crashlab.durable.fuse`): what a cut keeps is what the persistence model says.

The model is checked twice: on the layer's operations called directly (fast, no FUSE), and through a
real mount, with plain syscalls and with SQLite run in a process killed before the cut (slow,
skipped where FUSE is not usable). Every mount is under a fresh temporary directory, and a test
fails if one is left behind. The sweeps at the end run loops of their own, written here, that import
nothing of crashlab's but the HTTP loop of examples/: one that saves with sync(2) or syncfs(2), one
whose restart is stuck only in a state between a process crash's and the most a cut can take.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from crashlab.durable.fuse import KEEP, MOST, STATES, SYNC, WAIT, Layer, Passthrough, answer, unusable
from crashlab.runners.served import end
from crashlab.service import control

from .helpers import started_in


def contents(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# The model, on the operations alone: every call passes through, and `restore` is the cut.

@pytest.fixture
def ops(tmp_path: Path) -> Passthrough:
    (tmp_path / "old").write_bytes(b"durable")
    return Passthrough(tmp_path)


def written(ops: Passthrough, path: str, data: bytes, sync: bool = False) -> None:
    fh = ops.create(path, 0o644, os.O_WRONLY | os.O_TRUNC)
    ops.write(path, data, 0, fh)
    if sync:
        ops.fsync(path, 0, fh)
    ops.release(path, fh)


def sync_dir(ops: Passthrough) -> None:
    fh = ops.opendir("/")
    ops.fsyncdir("/", 0, fh)
    ops.releasedir("/", fh)


def test_what_the_backing_holds_at_the_mount_is_durable(ops: Passthrough) -> None:
    written(ops, "/new", b"lost")
    ops.image.restore(ops.backing)
    assert contents(ops.backing) == {"old": b"durable"}


def test_synced_data_under_a_synced_name_survives_and_unsynced_data_does_not(ops: Passthrough) -> None:
    written(ops, "/synced", b"kept", sync=True)
    written(ops, "/unsynced", b"lost")
    sync_dir(ops)
    fh = ops.open("/synced", os.O_WRONLY)
    ops.write("/synced", b"LOST", 0, fh)  # after the sync: the cut takes it back
    ops.release("/synced", fh)
    ops.image.restore(ops.backing)
    assert contents(ops.backing) == {"old": b"durable", "synced": b"kept", "unsynced": b""}


def test_a_file_opened_o_sync_is_durable_at_each_write(ops: Passthrough) -> None:
    fh = ops.create("/log", 0o644, os.O_WRONLY | os.O_SYNC)
    ops.write("/log", b"line", 0, fh)
    ops.release("/log", fh)
    sync_dir(ops)
    ops.image.restore(ops.backing)
    assert contents(ops.backing)["log"] == b"line"


def test_a_rename_and_an_unlink_without_a_directory_sync_roll_back(ops: Passthrough) -> None:
    written(ops, "/journal", b"hot", sync=True)
    sync_dir(ops)
    ops.unlink("/journal")
    ops.rename("/old", "/new")
    assert contents(ops.backing) == {"new": b"durable"}
    ops.image.restore(ops.backing)
    assert contents(ops.backing) == {"journal": b"hot", "old": b"durable"}


def test_a_directory_sync_makes_its_renames_and_unlinks_durable(ops: Passthrough) -> None:
    ops.rename("/old", "/new")
    ops.mkdir("/sub", 0o755)
    sync_dir(ops)
    ops.image.restore(ops.backing)
    assert sorted(p.name for p in ops.backing.iterdir()) == ["new", "sub"]
    assert (ops.backing / "new").read_bytes() == b"durable"  # the inode's data, under its new name


def test_a_rename_across_directories_synced_in_its_target_alone_leaves_one_name(ops: Passthrough) -> None:
    """A rename is one operation: the kernel journals the old name's removal with the new name, so a sync of the
    target makes both durable. The layer brought the file back under both names, a task both to do and done."""
    for name in ("/todo", "/done"):
        ops.mkdir(name, 0o755)
    written(ops, "/todo/task", b"file A", sync=True)
    sync_dir(ops)
    synced(ops, "/todo")
    ops.rename("/todo/task", "/done/task")
    synced(ops, "/done")
    ops.image.restore(ops.backing)
    assert sorted(str(p.relative_to(ops.backing)) for p in ops.backing.rglob("*")) == ["done", "done/task", "old",
                                                                                       "todo"]
    assert (ops.backing / "done" / "task").read_bytes() == b"file A"


def synced(ops: Passthrough, directory: str) -> None:
    fh = ops.opendir(directory)
    ops.fsyncdir(directory, 0, fh)
    ops.releasedir(directory, fh)


def test_a_sync_of_everything_makes_every_operation_durable(ops: Passthrough) -> None:
    """What the harness tells the layer when the loop calls sync(2) or syncfs(2), which FUSE never passes on."""
    written(ops, "/marker", b"A.started")
    ops.rename("/old", "/renamed")
    assert answer(ops.image, SYNC) == {"synced": True}
    ops.image.restore(ops.backing)
    assert contents(ops.backing) == {"marker": b"A.started", "renamed": b"durable"}


def test_a_cut_admits_each_prefix_of_what_no_sync_made_durable_newest_first(ops: Passthrough) -> None:
    """The disk takes the operations in order: a cut keeps those before some moment, and after it only what a sync
    made durable. First what a process crash leaves, last the most a cut can take; equal states once."""
    fh = ops.create("/progress", 0o644, os.O_WRONLY)  # a name never synced
    ops.write("/progress", b'{"run": ', 0, fh)
    ops.write("/progress", b'"r1"}', 8, fh)  # two writes: a cut between them leaves half a record
    ops.release("/progress", fh)
    written(ops, "/log", b"synced", sync=True)  # durable whatever the cut: the log's data, not its name
    assert answer(ops.image, STATES) == {"states": 5}
    states = []
    for state in range(1, 6):
        ops.image.restore(ops.backing, state)
        states.append(contents(ops.backing))
    assert states == [{"log": b"synced", "old": b"durable", "progress": b'{"run": "r1"}'},  # a process crash's
                      {"old": b"durable", "progress": b'{"run": "r1"}'},  # the log's name never reached the disk
                      {"old": b"durable", "progress": b'{"run": '},  # half a record: a restart cannot read it
                      {"old": b"durable", "progress": b""},
                      {"old": b"durable"}]  # no name was synced: the most a cut can take is every new one


def test_a_death_leaves_at_most_most_states(ops: Passthrough) -> None:
    fh = ops.create("/log", 0o644, os.O_WRONLY)
    for line in range(3 * MOST):
        ops.write("/log", b"line %02d\n" % line, 8 * line, fh)
    ops.release("/log", fh)
    assert answer(ops.image, STATES) == {"states": MOST}
    ops.image.restore(ops.backing, MOST)
    assert contents(ops.backing) == {"old": b"durable"}  # the last is always the most a cut can take


def test_links_are_refused(ops: Passthrough) -> None:
    with pytest.raises(OSError) as refused:
        ops.link("/old", "/again")
    assert refused.value.errno == 38  # ENOSYS


def test_a_layer_s_mount_point_a_killed_sweep_left_is_removed_by_the_next_and_a_held_one_is_not(tmp_path, monkeypatch):
    """`$TMPDIR/crashlab-layer-*` left by a sweep killed by SIGKILL was never removed. A layer's mount point is held
    as a scratch directory is (by the sweep and the layer's process); the next layer removes those none holds.
    The mount itself is left out: this runs where FUSE does not."""
    monkeypatch.setattr(Layer, "mount", lambda self: None)
    monkeypatch.setattr(Layer, "unmount", lambda self, then: None)
    ended = subprocess.Popen(["true"])
    ended.wait()
    left = tmp_path / f"crashlab-layer-pid{ended.pid}-left"
    left.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLDS, str(tmp_path / f"crashlab-layer-pid{ended.pid}-held")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with Layer.over(tmp_path / "backing") as layer:
            assert layer.mountpoint.name.startswith(f"crashlab-layer-pid{os.getpid()}-")
            assert not left.exists() and (tmp_path / f"crashlab-layer-pid{ended.pid}-held").is_dir()
        assert not layer.mountpoint.exists()
    finally:
        holder.kill()
        holder.wait()


#: A process that holds a directory as a sweep's layer does (`crashlab.scratch.shared`), until it is killed.
HOLDS = """
import sys, time
from pathlib import Path
from crashlab.scratch import shared

shared(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""


# The same operations, telling the harness each that changes what a death leaves (a program's crash points).

@pytest.fixture
def telling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Passthrough, list[str], list[bool]]:
    """Operations that tell each point into a list, and go on or not as the next word in `words` says (go, if none);
    every request is a program's, as through a mount each of its process's is."""
    monkeypatch.setattr("crashlab.durable.fuse._requester", lambda: 0)
    monkeypatch.setattr("crashlab.durable.fuse.programs", lambda tid: True)
    told: list[str] = []
    words: list[bool] = []

    def tell(label: str) -> bool:
        told.append(label)
        return words.pop(0) if words else True

    return Passthrough(tmp_path, tell=tell), told, words


def test_each_operation_a_death_can_fall_at_is_told_by_what_it_is_and_its_path(telling) -> None:
    ops, told, _ = telling
    fh = ops.create("/progress.tmp", 0o644, os.O_WRONLY)
    ops.write("/progress.tmp", b"{}", 0, fh)
    ops.fsync("/progress.tmp", 0, fh)
    ops.fsync("/progress.tmp", 1, fh)
    ops.flush("/progress.tmp", fh)
    ops.flush("/progress.tmp", fh)  # a second close (of a dup), nothing written since: no point
    ops.release("/progress.tmp", fh)
    ops.rename("/progress.tmp", "/progress.json")
    sync_dir(ops)
    reader = ops.open("/progress.json", os.O_RDONLY)
    ops.read("/progress.json", 2, 0, reader)
    ops.flush("/progress.json", reader)  # a close after reading only: no point
    ops.release("/progress.json", reader)
    ops.unlink("/progress.json")
    assert told == ["fsync:progress.tmp", "fdatasync:progress.tmp", "close:progress.tmp",
                    "rename:progress.tmp->progress.json", "fsync:.", "unlink:progress.json"]


def test_an_operation_whose_process_died_at_it_is_never_done(telling) -> None:
    ops, told, words = telling
    fh = ops.create("/progress.tmp", 0o644, os.O_WRONLY)
    ops.write("/progress.tmp", b"{}", 0, fh)
    ops.release("/progress.tmp", fh)
    told.clear()
    words.append(False)  # the harness killed the process there
    with pytest.raises(OSError) as failed:
        ops.rename("/progress.tmp", "/progress.json")
    assert failed.value.errno == 5  # EIO, to nobody
    assert sorted(p.name for p in ops.backing.iterdir()) == ["progress.tmp"]
    ops.rename("/progress.tmp", "/progress.json")  # the restart's, told and done
    assert told == ["rename:progress.tmp->progress.json"] * 2 and (ops.backing / "progress.json").exists()


# Through a real mount: slow, and only where FUSE works.

needs_fuse = pytest.mark.skipif(bool(unusable()), reason=f"FUSE is not usable here: {unusable()}")


@pytest.fixture(autouse=True)
def own_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's layers mount under its own tmp_path, so a test counts its own mounts, never those of a test
    running beside it on another worker."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def mounts(under: Path) -> list[str]:
    """The power-cut layers mounted under `under`."""
    with open("/proc/mounts") as table:
        points = [line.split()[1] for line in table]
    return [point for point in points if point.startswith(str(under)) and "crashlab-layer-" in point]


@pytest.fixture
def layer(tmp_path: Path) -> Iterator[Layer]:
    backing = tmp_path / "backing"
    backing.mkdir()
    (backing / "old").write_bytes(b"durable")
    with Layer.over(backing) as mounted:
        yield mounted
    assert mounts(tmp_path) == []  # nothing left mounted, whatever the test did


def killed_after(body: Callable[[], None]) -> None:
    """Run `body` in a child process and SIGKILL it once it is done: no close, no checkpoint, no cleanup."""
    pid = os.fork()
    if pid == 0:
        try:
            body()
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def rows(path: Path) -> int:
    """How many rows table t holds, after SQLite's own recovery (a hot journal rolled back, a WAL replayed)."""
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    try:
        found = db.execute("select count(*) from sqlite_master where name = 't'").fetchone()[0]
        return db.execute("select count(*) from t").fetchone()[0] if found else 0
    finally:
        db.close()


@pytest.mark.slow
@needs_fuse
def test_through_the_mount_a_cut_keeps_only_what_the_syncs_made_durable(layer: Layer) -> None:
    run = layer.mountpoint
    fd = os.open(run / "synced", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"kept")
    os.fsync(fd)
    os.close(fd)
    (run / "unsynced").write_bytes(b"lost")
    directory = os.open(run, os.O_RDONLY)
    os.fsync(directory)
    os.close(directory)
    (run / "unsynced").write_bytes(b"lost too")
    (run / "nameless").write_bytes(b"never named durably")
    os.rename(run / "old", run / "renamed")
    layer.cut()
    assert contents(run) == {"old": b"durable", "synced": b"kept", "unsynced": b""}
    assert contents(layer.backing) == contents(run)


@pytest.mark.slow
@needs_fuse
def test_a_kill_alone_loses_nothing(layer: Layer) -> None:
    killed_after(lambda: (layer.mountpoint / "unsynced").write_bytes(b"in the page cache"))
    layer.unmount(KEEP)
    assert contents(layer.backing) == {"old": b"durable", "unsynced": b"in the page cache"}


def transactions(path: Path, pragmas: str, count: int) -> Callable[[], None]:
    def body() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        db.executescript(pragmas)
        db.execute("create table t (n)")
        for n in range(count):
            db.execute("insert into t values (?)", (n,))  # each a transaction, committed
    return body


@pytest.mark.slow
@needs_fuse
def test_sqlite_in_wal_with_synchronous_full_keeps_every_committed_transaction(layer: Layer) -> None:
    db = layer.mountpoint / "graph.sqlite"
    killed_after(transactions(db, "pragma journal_mode=wal; pragma synchronous=full;", 5))
    layer.cut()
    assert rows(db) == 5


@pytest.mark.slow
@needs_fuse
def test_sqlite_in_wal_with_synchronous_off_loses_committed_transactions(layer: Layer) -> None:
    db = layer.mountpoint / "graph.sqlite"
    killed_after(transactions(db, "pragma journal_mode=wal; pragma synchronous=off;", 5))
    layer.cut()
    assert rows(db) < 5


@pytest.mark.slow
@needs_fuse
def test_sqlite_in_delete_mode_loses_its_last_commit_to_the_journal_it_unlinked(layer: Layer) -> None:
    """DBOS's system database: journal_mode=delete, synchronous=full. The commit is the journal's unlink, and
    no directory sync follows it: a cut brings the journal back, and the next open rolls the commit back."""
    db = layer.mountpoint / "dbos.sqlite"
    killed_after(transactions(db, "pragma journal_mode=delete; pragma synchronous=full;", 3))
    layer.cut()
    assert "dbos.sqlite-journal" in os.listdir(layer.mountpoint)
    assert rows(db) == 2


@pytest.mark.slow
@needs_fuse
def test_while_the_layer_holds_an_operation_at_its_point_it_still_counts_the_states_a_cut_there_leaves(
        tmp_path: Path) -> None:
    """At a point the layer holds the operation, and waits for the harness's word, which a power cut there first asks
    how many states a cut leaves. Asked through the mount, the question waited behind the held operation, and the
    harness on the question: a sweep hung so. Asked on the layer's own line, it is answered at once: the file written
    and not yet synced, 3 states (the crash's, its write lost, its name lost); once the fsync is done, its data is in
    every state, and 2 are left (its name was never synced)."""
    backing = tmp_path / "backing"
    backing.mkdir()
    with Layer.over(backing, tells=True) as layer, ThreadPoolExecutor(1) as harness:
        assert layer.line is not None
        program = subprocess.Popen([sys.executable, "-c", WRITES_AND_SYNCS], cwd=layer.mountpoint)
        try:
            assert control.receive(layer.line) == {"kind": "point", "label": "fsync:progress"}
            counted = harness.submit(layer.states)
            try:
                assert counted.result(timeout=WAIT) == 3
            finally:  # the word, which frees a question stuck behind the held operation, and the close after it
                control.send(layer.line, control.GO)
                assert control.receive(layer.line) == {"kind": "point", "label": "close:progress"}
                control.send(layer.line, control.GO)
        finally:
            assert program.wait(timeout=WAIT) == 0
        assert layer.states() == 2


@pytest.mark.slow
@needs_fuse
def test_a_process_killed_while_a_thread_of_it_stands_in_a_held_operation_ends(tmp_path: Path) -> None:
    """A program of two threads: one stands in an operation the layer holds, told and not yet answered, when the
    harness kills the process for the other's sake (a death at the service's point). A process ends only once each
    of its threads has left the kernel, and the held one leaves only on the layer's answer, which waits for the
    harness's word: ending it, the harness answers every point told meanwhile, gone, and the operation is not done."""
    backing = tmp_path / "backing"
    backing.mkdir()
    with Layer.over(backing, tells=True) as layer, ThreadPoolExecutor(1) as harness:
        assert layer.line is not None
        child = started_in(layer.mountpoint, WRITES_AND_SYNCS)
        assert select.select([layer.line], [], [], WAIT)[0]  # its fsync told, and held, while the harness is busy
        ending = harness.submit(end, child, layer.line)
        try:
            ending.result(timeout=WAIT)
        finally:  # the word the harness owed, which frees a harness that waits for the process to end
            if not ending.done():
                control.send(layer.line, control.GONE)
        assert layer.states() == 3  # the write made, its fsync never: a cut may lose it, or its name


#: A program that writes a file and syncs it: two points, the fsync and the close after the write.
WRITES_AND_SYNCS = """
import os
fd = os.open("progress", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"synced")
os.fsync(fd)
os.close(fd)
"""


# The forked runner under --fault power-cut: a loop's run directory on the layer, cut at each death.

EFFECTS = "examples/http_loop.yaml"

#: The HTTP loop of examples/, keyed, with its progress saved as a careless loop saves it: no fsync of the file, no
#: fsync of the folder. A kill loses nothing of it; a power cut loses it all, the run ID with it.
CARELESS = '''
import importlib.util, json
from pathlib import Path

spec = importlib.util.spec_from_file_location("http_loop", {path!r})
http_loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(http_loop)


def unsynced(path, progress):
    path.write_text(json.dumps(progress))


def careless():
    http_loop.save = unsynced
    http_loop.triage(keyed=True)
'''


def rows_of(cli: Callable[..., tuple[int, str, str]], loop: str, *fault: str) -> dict[str, dict]:
    code, out, err = cli("sweep", "--loop", loop, "--effects", EFFECTS, "--depth", "1", *fault, "--format", "json")
    assert code == 0, err
    return {row["variant"]: row for row in json.loads(out)}


@pytest.mark.slow
@needs_fuse
def test_a_loop_that_syncs_its_progress_comes_through_a_power_cut_as_through_a_kill(cli, tmp_path: Path) -> None:
    """The HTTP loop saves with fsync, rename and a directory fsync: the cut takes nothing from it."""
    loop = "examples/http_loop.py:plain,keyed"
    killed, cut = rows_of(cli, loop), rows_of(cli, loop, "--fault", "power-cut")
    for variant, row in killed.items():
        assert {k: cut[variant][k] for k in ("scenarios", "dups", "missing", "stuck")} == \
            {k: row[k] for k in ("scenarios", "dups", "missing", "stuck")}
    assert cut["keyed"]["dups"] == 0 and cut["plain"]["dups"] > 0
    assert mounts(tmp_path) == []


@pytest.mark.slow
@needs_fuse
def test_a_keyed_loop_that_never_syncs_its_progress_duplicates_under_a_power_cut_only(cli, tmp_path: Path) -> None:
    from tests.conftest import ROOT

    loop = tmp_path / "careless.py"
    loop.write_text(CARELESS.format(path=str(ROOT / "examples" / "http_loop.py")))
    killed = rows_of(cli, f"{loop}:careless")["careless"]
    cut = rows_of(cli, f"{loop}:careless", "--fault", "power-cut")["careless"]
    assert killed["dups"] == 0 and killed["scenarios"] < cut["scenarios"]  # each death leaves several states
    assert cut["dups"] > 0  # the restart finds no progress, draws a new run ID, and so new keys
    assert mounts(tmp_path) == []


@pytest.mark.slow
@needs_fuse
def test_a_power_cut_scenario_names_its_cut_and_replays(cli) -> None:
    code, out, err = cli("explain", "plain+power-cut=none:2~1", "--loop", "examples/http_loop.py:plain",
                         "--effects", EFFECTS)
    assert code == 0, err
    assert "▶ the POWER is cut: every file is as the page cache held it" in out  # the HTTP loop syncs it all


@pytest.mark.slow
@needs_fuse
def test_a_power_cut_tells_what_it_took_back(layer: Layer) -> None:
    fd = os.open(layer.mountpoint / "journal", os.O_WRONLY | os.O_CREAT, 0o644)
    os.fsync(fd)
    os.close(fd)
    directory = os.open(layer.mountpoint, os.O_RDONLY)
    os.fsync(directory)
    os.close(directory)
    os.unlink(layer.mountpoint / "journal")
    (layer.mountpoint / "old").write_bytes(b"unsynced")
    (layer.mountpoint / "new").write_bytes(b"")
    assert layer.cut() == ["journal is back (its unlink or rename never reached the disk)",
                           "new is gone (its name never reached the disk)",
                           "old lost its latest writes (8 bytes, now 7)"]


# What Linux keeps that FUSE never tells: sync(2) and syncfs(2), caught by the runner (`crashlab.runners.syncs`).

#: A program that writes a file and calls sync(2) and syncfs(2) on it, importing nothing of crashlab's.
SYNCS_ALL = """
import ctypes, os
with open("marker", "w") as file:
    file.write("A.started")
os.sync()
fd = os.open(".", os.O_RDONLY)
assert ctypes.CDLL(None, use_errno=True).syncfs(fd) == 0
"""


@pytest.mark.slow
@needs_fuse
def test_the_layer_alone_never_hears_sync_or_syncfs(layer: Layer) -> None:
    """Why the runner catches them: FUSE passes neither to the file system (the kernel sends FUSE_SYNCFS to virtiofs
    alone), so a process the runner did not start loses its marker to the cut, synced or not."""
    subprocess.run([sys.executable, "-c", SYNCS_ALL], cwd=layer.mountpoint, check=True)
    layer.cut()
    assert contents(layer.mountpoint) == {"old": b"durable"}


#: The HTTP loop of examples/, keyed, saving its progress with no fsync but a sync(2) (or a syncfs(2)) after it, as
#: a loop may that trusts Linux to make everything durable: on Linux it does.
SYNCED = '''
import ctypes, importlib.util, json, os
from pathlib import Path

spec = importlib.util.spec_from_file_location("http_loop", {path!r})
http_loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(http_loop)


def synced(path, progress):
    path.write_text(json.dumps(progress))
    os.sync()


def synced_fs(path, progress):
    path.write_text(json.dumps(progress))
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        assert ctypes.CDLL(None, use_errno=True).syncfs(fd) == 0
    finally:
        os.close(fd)


def sync():
    http_loop.save = synced
    http_loop.triage(keyed=True)


def syncfs():
    http_loop.save = synced_fs
    http_loop.triage(keyed=True)
'''


@pytest.mark.slow
@needs_fuse
def test_a_loop_that_saves_with_sync_or_syncfs_comes_through_a_power_cut_as_through_a_kill(cli, tmp_path) -> None:
    """The layer dropped both calls: the restart found no progress, drew a new run ID and filed every issue again."""
    from tests.conftest import ROOT

    loop = tmp_path / "synced.py"
    loop.write_text(SYNCED.format(path=str(ROOT / "examples" / "http_loop.py")))
    killed = rows_of(cli, f"{loop}:sync,syncfs")
    cut = rows_of(cli, f"{loop}:sync,syncfs", "--fault", "power-cut")
    for variant in ("sync", "syncfs"):
        assert {k: cut[variant][k] for k in ("scenarios", "dups", "missing", "stuck")} == \
            {k: killed[variant][k] for k in ("scenarios", "dups", "missing", "stuck")} == \
            {"scenarios": 9, "dups": 0, "missing": 0, "stuck": 0}
    assert mounts(tmp_path) == []


# A rename across directories is one operation.

#: A program that moves a task from todo/ to done/ once it is done, syncing done/ alone, importing nothing of
#: crashlab's: on Linux the move is durable, the old name's removal with the new one.
MOVES = """
import os
for name in ("todo", "done"):
    os.mkdir(name)
with open("todo/task", "w") as file:
    file.write("file A")
    file.flush()
    os.fsync(file.fileno())
for name in ("todo", ".", "done"):
    fd = os.open(name, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
os.rename("todo/task", "done/task")
fd = os.open("done", os.O_RDONLY)
os.fsync(fd)
os.close(fd)
"""


@pytest.mark.slow
@needs_fuse
def test_through_the_mount_a_task_moved_and_synced_in_its_target_alone_is_done_not_to_do_again(layer: Layer) -> None:
    subprocess.run([sys.executable, "-c", MOVES], cwd=layer.mountpoint, check=True)
    layer.cut()
    assert sorted(str(p.relative_to(layer.mountpoint)) for p in layer.mountpoint.rglob("*")) == \
        ["done", "done/task", "old", "todo"]


# The states a death admits, each a scenario of its own.

#: The HTTP loop of examples/, keyed by a run ID of the job's (not drawn at random), saving its progress with no sync:
#: a cut that takes every save back restarts it from the top, under the same keys, and it files nothing twice. Only a
#: cut between the progress file's creation and its write (an empty file, ext4's zero-length file) leaves what its
#: restart cannot read.
FIXED_RUN = '''
import importlib.util, json, os
from pathlib import Path

spec = importlib.util.spec_from_file_location("http_loop", {path!r})
http_loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(http_loop)


def unsynced(path, progress):
    path.write_text(json.dumps(progress))


def begin():
    saved = Path(os.environ.get("CRASHLAB_RUN_DIR", ".")) / "progress.json"
    return saved, json.loads(saved.read_text()) if saved.exists() else {{"run": "triage-1", "done": {{}}}}


def fixed_run():
    http_loop.save = unsynced
    http_loop.begin = begin
    http_loop.triage(keyed=True)
'''


@pytest.mark.slow
@needs_fuse
def test_a_death_leaves_every_state_the_model_admits_and_each_replays_by_its_id(cli, tmp_path) -> None:
    """The layer left one state per death, the most a cut can take: there this loop is whole (nothing filed twice,
    nothing stuck), and the empty progress file between the two, which its restart cannot read, went unseen."""
    from tests.conftest import ROOT

    loop = tmp_path / "fixed_run.py"
    loop.write_text(FIXED_RUN.format(path=str(ROOT / "examples" / "http_loop.py")))
    code, out, err = cli("sweep", "--loop", f"{loop}:fixed_run", "--effects", EFFECTS, "--depth", "1", "--fault",
                         "power-cut", "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["dups"], row["missing"]) == (0, 0)
    assert row["stuck"] > 0 and row["scenarios"] > 9  # several states at each of its 9 points
    code, out, err = cli("explain", "fixed-run+power-cut=none:4~1", "--loop", f"{loop}:fixed_run", "--effects", EFFECTS)
    assert code == 0 and "every file is as the page cache held it" in out and "STUCK" not in out, err
    code, out, err = cli("explain", "fixed-run+power-cut=none:4~2", "--loop", f"{loop}:fixed_run", "--effects", EFFECTS)
    assert code == 0 and "progress.json lost its latest writes" in out and "STUCK" in out, err
    assert mounts(tmp_path) == []
