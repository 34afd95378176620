"""Power cuts: the disk keeps only what the store's syncs made durable, and the restart meets that.

`--sync full` (the file store's default) leaves exactly what a process crash leaves, so the sweep is
the crash sweep cell for cell. With less, a cut can take renamed checkpoints back, or leave an empty,
torn or zero-filled file: a restart cannot read that, and is stuck, never fresh. How much it can take
back is the file system's: `--disk posix` (an upper bound) admits more than ext4 can leave
(`tests/test_disk_ext4.py` holds the ext4 models to a real image).
"""

import json
import os
from dataclasses import replace

import pytest
from hypothesis import given, settings

from crashlab.durable.checkpoint import Checkpoint
from crashlab.durable.disk import BLOCK, MODELS, Disk
from crashlab.durable.store import FileStore, MemoryStore
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.protocols.points import Recorder

from .helpers import scenario, swept
from .oracle import shared_is_re_executed
from .strategies import jobs

#: Every variant that runs in this process, each crash an exception: the runner that models the page cache.
IN_PROCESS = [slug for slug, v in VARIANTS.items() if "in-process" in v.runners]
AGENTS = list(FAMILIES["agent"])


def saved(disk: Disk, *versions: bytes) -> Disk:
    for data in versions:
        disk.save(data)
        disk.rename()
    return disk


def test_the_disk_keeps_what_each_sync_made_durable():
    full, file, none = (saved(Disk(sync, b"old"), b"v1", b"v2") for sync in ("full", "file", "none"))
    for model in MODELS:
        assert [s.data for s in full.survivors(model)] == [b"v2"]
    assert [s.data for s in file.survivors("posix")] == [b"v2", b"v1", b"old"]  # renames in order, data synced
    assert [s.data for s in none.survivors("posix")] == [b"v2", b"", b"v", b"\0\0", b"v1", b"", b"v", b"\0\0", b"old"]
    assert none.survivors("posix")[2].what == "the checkpoint of save 2, torn: half its data reached the disk"
    assert [s.what for s in Disk("none").survivors("posix")] == ["no checkpoint file"]


def test_on_ext4_an_fsync_commits_the_renames_before_it_and_a_replacing_rename_writes_the_data_first():
    """The review's three states ext4 cannot leave: more than one rename taken back under --sync file, an
    empty file after a rename over an existing one, a tear of a file of one block."""
    file, none = (saved(Disk(sync, b"old"), b"v1", b"v2") for sync in ("file", "none"))
    for model in ("ext4-ordered", "ext4-writeback"):
        assert [s.data for s in file.survivors(model)] == [b"v2", b"v1"]
        # Never empty; zero-filled at its full size only in the window before ext4 marks its blocks written.
        assert [s.data for s in none.survivors(model)] == [b"v2", b"\0\0", b"v1", b"\0\0", b"old"]
    assert none.survivors("ext4-ordered")[0].what == ("the checkpoint of save 2, whole: it replaced a checkpoint, so "
                                                      "ext4 (auto_da_alloc) wrote its data before the rename")
    assert none.survivors("ext4-ordered")[2].what.endswith("; the renames after it had not reached ext4's journal")


def test_on_ext4_a_new_name_may_come_before_its_data_and_a_long_file_tears_at_a_block_boundary():
    small, large = b"v1", b"x" * (BLOCK + 1)
    for data in (small, large):
        fresh = saved(Disk("none"), data)
        torn = [data[:BLOCK]] if data is large else []
        for model in ("ext4-ordered", "ext4-writeback"):
            assert [s.data for s in fresh.survivors(model)] == [data, b"", *torn, bytes(len(data)), None]
    assert saved(Disk("file"), small).survivors("ext4-ordered")[0].what == "the checkpoint of save 1, whole"


def test_a_save_not_yet_renamed_leaves_the_old_checkpoint_whatever_the_syncs():
    for sync in ("full", "file", "none"):
        disk = Disk(sync, b"old")
        disk.save(b"new")
        assert disk.current == b"old"
        for model in MODELS:
            assert [s.data for s in disk.survivors(model)] == [b"old"]


@pytest.mark.parametrize("sync, syncs", [("none", 0), ("file", 1), ("full", 2)])
def test_the_file_store_makes_the_syncs_it_names_and_models_what_they_keep(tmp_path, monkeypatch, sync, syncs):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    points, memory_points = Recorder(), Recorder()
    points.start_process(), memory_points.start_process()
    store, memory = FileStore(tmp_path, points, sync), MemoryStore(memory_points, sync)
    for turn in range(1, 3):
        checkpoint = Checkpoint.new("run").with_answer(f"answer {turn}")
        store.save(checkpoint), memory.save(checkpoint)
    assert len(calls) == 2 * syncs
    assert store.files() == memory.files()
    for model in MODELS:
        assert store.survivors(model) == memory.survivors(model)


def test_the_file_store_syncs_fully_unless_told_otherwise(tmp_path):
    assert FileStore(tmp_path, Recorder()).disk.sync == "full"


def test_a_restored_store_holds_exactly_what_it_was_given(tmp_path):
    points = Recorder()
    points.start_process()
    store = FileStore(tmp_path, points, "none")
    store.save(Checkpoint.new("run"))
    store.restore(())
    assert store.read() is None and store.files() == ()


@pytest.mark.parametrize("slug", IN_PROCESS)
def test_with_full_syncs_a_power_cut_is_a_process_crash(triage, slug):
    cut = swept(slug, triage, "power-cut=full")
    crash = swept(slug, triage)
    assert (cut.row().faults, cut.row().setting) == ("power-cut full", "sync full")
    assert replace(cut.row(), faults="crash", setting="") == crash.row()
    assert all(s.choices == ((1,),) * len(s.crashes) for s in cut.scenarios())


@pytest.mark.parametrize("sync, depth", [("file", 1), ("none", 1),
                                         pytest.param("file", 2, marks=pytest.mark.slow),
                                         pytest.param("none", 2, marks=pytest.mark.slow)])
def test_every_power_cut_scenario_is_what_re_executing_it_gives(triage, sync, depth):
    """The oracle: the shared sweep's outcome of each scenario equals running that scenario from nothing."""
    shared_is_re_executed(triage, ("markers", "agent-keyed"), f"power-cut={sync}", depth=depth, sample=200)


def test_a_lost_first_save_takes_the_run_id_and_so_the_keys_with_it(triage):
    """Under --sync file on a disk that keeps no rename but the directory's syncs (posix), the agent's first
    checkpoint (which holds its run ID) can vanish: fresh keys, duplicates. ext4 cannot lose it: the second
    save's fsync commits the first rename."""
    dups = [s for s in swept("agent-keyed", triage, "power-cut=file.posix", depth=1).scenarios() if s.outcome.extra]
    assert dups
    for s in dups:
        run = scenario("agent-keyed", triage, s.crashes, "power-cut=file.posix", choices=s.choices)
        assert run.left == ("the power cut left no checkpoint file",)
        keys = [e.detail["key"] for e in run.points.events if e.kind == "request" and e.detail["call"] == "A"]
        assert len(set(keys)) == len(keys) > 1
    for model in ("", ".ext4-writeback"):
        assert swept("agent-keyed", triage, f"power-cut=file{model}", depth=1).row().dups == 0


@pytest.mark.parametrize("disk", [".posix", "", ".ext4-writeback"])
def test_an_empty_or_torn_checkpoint_is_stuck_and_the_restart_does_nothing(triage, disk):
    cut = swept("keys-markers", triage, f"power-cut=none{disk}", depth=1)
    stuck = [s for s in cut.scenarios() if s.outcome.stuck]
    assert stuck and cut.row().stuck == len(stuck)
    for s in stuck:
        run = scenario("keys-markers", triage, s.crashes, f"power-cut=none{disk}", choices=s.choices)
        restart = [e for e in run.points.events if e.process == 2]
        assert run.stuck and [e.kind for e in restart] == ["load"]
        assert ", empty: " in run.left[0] or ", torn: " in run.left[0] or ", zero-filled " in run.left[0]
        assert s.outcome.missing == () and s.outcome.stuck == 1


@settings(max_examples=10, deadline=None)
@given(jobs())
def test_on_any_job_the_agent_comes_through_a_power_cut_under_full_syncs(job):
    for slug in AGENTS:
        if VARIANTS[slug].refuses(job) is None:
            row = swept(slug, job, "power-cut=full").row()
            assert (row.dups, row.missing, row.stuck, row.wrong) == (0, 0, 0, 0), slug


def test_sweep_fault_power_cut_names_its_syncs_and_disk_and_refuses_them_elsewhere(cli):
    code, out, err = cli("sweep", "--fault", "power-cut", "--sync", "file", "--disk", "posix", "--variant",
                         "keys-markers,agent-keyed", "--depth", "1", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys-markers"]["dups"] == 0 and rows["agent-keyed"]["dups"] > 0
    assert rows["agent-keyed"]["setting"] == "sync file, disk posix" and rows["agent-keyed"]["stuck"] == 0
    assert rows["agent-keyed"]["faults"] == "power-cut file posix"
    code, replayed, _ = cli("sweep", "--fault", "power-cut", "--sync", "file", "--disk", "posix", "--variant",
                            "keys-markers,agent-keyed", "--depth", "1", "--format", "json", "--no-share")
    assert (code, replayed) == (0, out)  # re-executing every scenario finds the shared sweep's rows
    code, out, err = cli("sweep", "--fault", "power-cut", "--sync", "file", "--variant", "agent-keyed", "--depth", "1",
                         "--format", "json")
    assert code == 0 and [(r["setting"], r["dups"]) for r in json.loads(out)] == [("sync file", 0)]  # ext4-ordered
    for args in (["sweep", "--sync", "full"], ["sweep", "--fault", "wrong-answer", "--sync", "file"]):
        code, out, err = cli(*args)
        assert (code, out) == (2, "") and "--sync is the power-cut fault's setting: it needs --fault power-cut" in err
    code, out, err = cli("sweep", "--disk", "posix")
    assert (code, out) == (2, "") and "--disk is the power-cut fault's setting: it needs --fault power-cut" in err
    code, out, err = cli("explain", "keys:3", "--sync", "full")  # the ID names the faults and their settings
    assert (code, out) == (2, "") and "No such option '--sync'" in err
    code, out, err = cli("sweep", "--fault", "power-cut", "--sync", "sometimes")
    assert code == 2 and "'sometimes' is not one of 'none', 'file', 'full'" in err
    code, out, err = cli("sweep", "--fault", "power-cut", "--disk", "zfs")
    assert code == 2 and "'zfs' is not one of 'ext4-ordered', 'ext4-writeback', 'posix'" in err
    for bad, problem in (("sometimes", "--sync 'sometimes' is not one of none, file, full"),
                         ("none.zfs", "--disk 'zfs' is not one of ext4-ordered, ext4-writeback, posix"),
                         ("none.posix.more", "the power-cut fault takes 2 settings, SYNC.DISK")):
        code, out, err = cli("explain", f"keys+power-cut={bad}:3~1")
        assert (code, out) == (2, "") and problem in err and len(err.splitlines()) == 1, bad


def test_a_scenario_id_names_the_disk_only_off_its_default(cli):
    code, out, _ = cli("explain", "keys+power-cut=file.ext4-ordered:3~1")
    assert code == 0 and out.startswith("scenario keys+power-cut=file:3~1:")
    code, out, _ = cli("explain", "keys+power-cut=none.posix:3~1")
    assert code == 0 and out.startswith("scenario keys+power-cut=none.posix:3~1:")


def test_explain_tells_what_the_power_cut_left_on_the_disk_and_why(cli):
    code, out, err = cli("explain", "agent-keyed+power-cut=file.posix:9~4")
    assert code == 0 and "the power cut left no checkpoint file" in out and "DUPLICATED" in out
    assert "renamed         not durable: its data is synced, but no directory sync makes the rename durable" in out
    code, out, err = cli("explain", "agent-keyed+power-cut=file:9~2")  # ext4-ordered, the default
    assert code == 0 and "DUPLICATED" not in out
    assert ("the power cut left the checkpoint of save 2, whole; the renames after it had not reached ext4's "
            "journal") in out
    assert "renamed         not yet durable: ext4's journal commits it within seconds, or at the next save's fsync" in out
    code, out, err = cli("explain", "agent-keyed+power-cut=full:9~1")
    assert code == 0 and "renamed         now durable: its data synced, then the directory" in out
    code, out, err = cli("explain", "keys-markers+power-cut:2~2")  # --sync none, the fault's default
    assert code == 0 and out.startswith("scenario keys-markers+power-cut=none:2~2:")
    assert "ext4 (delayed allocation) had not written its data when the rename reached the journal" in out
    assert "STUCK" in out
    every = "under power-cut every crash names the state its death left"
    for bad, problem in (("keys+power-cut:3", every), ("keys+power-cut:3~0", "counted from 1"),
                         ("keys+power-cut=none.posix:3~9", "keys+power-cut=none.posix:3~9: the death at process 1's "
                                                           "point 3 leaves 5 states (~1, ~2, ~3, ~4, ~5)"),
                         ("keys+power-cut:3~1:2", every), ("keys+power-cut:3~1:999~1", "no point 999")):
        code, out, err = cli("explain", bad)
        assert (code, out) == (2, "") and problem in err, bad
    code, out, err = cli("explain", "keys:3~1:2~1")
    assert code == 2 and "~S names the state a death left under a fault that leaves several" in err
