"""Power cuts: the disk keeps only what the store's syncs made durable, and the restart meets that.

`--sync full` (the file store's default) leaves exactly what a process crash leaves, so the sweep is
the crash sweep cell for cell. With less, a cut can take renamed checkpoints back to the last one on
disk, or leave an empty or torn file: a restart cannot read that, and is stuck, never fresh.
"""

import json
import os
from dataclasses import replace

import pytest
from hypothesis import given, settings

from crashlab.durable.checkpoint import Checkpoint
from crashlab.durable.disk import Disk
from crashlab.durable.store import FileStore, MemoryStore
from crashlab.engine.points import Recorder
from crashlab.loops import FAMILIES, VARIANTS

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
    assert [s.data for s in full.survivors()] == [b"v2"]
    assert [s.data for s in file.survivors()] == [b"v2", b"v1", b"old"]  # renames in order, each one's data synced
    assert [s.data for s in none.survivors()] == [b"v2", b"", b"v", b"v1", b"", b"v", b"old"]
    assert none.survivors()[2].what == "the checkpoint of save 2, torn: half its data reached the disk"
    assert [s.what for s in Disk("none").survivors()] == ["no checkpoint file"]


def test_a_save_not_yet_renamed_leaves_the_old_checkpoint_whatever_the_syncs():
    for sync in ("full", "file", "none"):
        disk = Disk(sync, b"old")
        disk.save(b"new")
        assert [s.data for s in disk.survivors()] == [b"old"] and disk.current == b"old"


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
    assert store.survivors() == memory.survivors() and store.files() == memory.files()


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
    """Under --sync file the agent's first checkpoint (which holds its run ID) can vanish: fresh keys, duplicates."""
    dups = [s for s in swept("agent-keyed", triage, "power-cut=file", depth=1).scenarios() if s.outcome.extra]
    assert dups
    for s in dups:
        run = scenario("agent-keyed", triage, s.crashes, "power-cut=file", choices=s.choices)
        assert run.left == ("the power cut left no checkpoint file",)
        keys = [e.detail["key"] for e in run.points.events if e.kind == "request" and e.detail["call"] == "A"]
        assert len(set(keys)) == len(keys) > 1


def test_an_empty_or_torn_checkpoint_is_stuck_and_the_restart_does_nothing(triage):
    cut = swept("keys-markers", triage, "power-cut=none", depth=1)
    stuck = [s for s in cut.scenarios() if s.outcome.stuck]
    assert stuck and cut.row().stuck == len(stuck)
    for s in stuck:
        run = scenario("keys-markers", triage, s.crashes, "power-cut=none", choices=s.choices)
        restart = [e for e in run.points.events if e.process == 2]
        assert run.stuck and [e.kind for e in restart] == ["load"]
        assert run.left[0].endswith(("empty: its data never reached the disk",
                                        "torn: half its data reached the disk"))
        assert s.outcome.missing == () and s.outcome.stuck == 1


@settings(max_examples=10, deadline=None)
@given(jobs())
def test_on_any_job_the_agent_comes_through_a_power_cut_under_full_syncs(job):
    for slug in AGENTS:
        if VARIANTS[slug].refuses(job) is None:
            row = swept(slug, job, "power-cut=full").row()
            assert (row.dups, row.missing, row.stuck, row.wrong) == (0, 0, 0, 0), slug


def test_sweep_fault_power_cut_names_its_syncs_and_refuses_them_elsewhere(cli):
    code, out, err = cli("sweep", "--fault", "power-cut", "--sync", "file", "--variant", "keys-markers,agent-keyed",
                         "--depth", "1", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys-markers"]["dups"] == 0 and rows["agent-keyed"]["dups"] > 0
    assert rows["agent-keyed"]["setting"] == "sync file" and rows["agent-keyed"]["stuck"] == 0
    assert rows["agent-keyed"]["faults"] == "power-cut file"
    code, replayed, _ = cli("sweep", "--fault", "power-cut", "--sync", "file", "--variant", "keys-markers,agent-keyed",
                            "--depth", "1", "--format", "json", "--no-share")
    assert (code, replayed) == (0, out)  # re-executing every scenario finds the shared sweep's rows
    for args in (["sweep", "--sync", "full"], ["sweep", "--fault", "wrong-answer", "--sync", "file"]):
        code, out, err = cli(*args)
        assert (code, out) == (2, "") and "--sync is the power-cut fault's setting: it needs --fault power-cut" in err
    code, out, err = cli("explain", "keys:3", "--sync", "full")  # the ID names the faults and their settings
    assert (code, out) == (2, "") and "No such option '--sync'" in err
    code, out, err = cli("sweep", "--fault", "power-cut", "--sync", "sometimes")
    assert code == 2 and "'sometimes' is not one of 'none', 'file', 'full'" in err
    code, out, err = cli("explain", "keys+power-cut=sometimes:3~1")
    assert (code, out) == (2, "") and "--sync 'sometimes' is not one of none, file, full" in err


def test_explain_tells_what_the_power_cut_left_on_the_disk(cli):
    code, out, err = cli("explain", "agent-keyed+power-cut=file:9~4")
    assert code == 0 and "the power cut left no checkpoint file" in out and "DUPLICATED" in out
    code, out, err = cli("explain", "keys-markers+power-cut:2~3")  # --sync none, the fault's default
    assert code == 0 and out.startswith("scenario keys-markers+power-cut=none:2~3:")
    assert "torn: half its data reached the disk" in out and "STUCK" in out
    every = "under power-cut every crash names the state its death left"
    for bad, problem in (("keys+power-cut:3", every), ("keys+power-cut:3~0", "counted from 1"),
                         ("keys+power-cut:3~9",
                          "keys+power-cut=none:3~9: the death at process 1's point 3 leaves 4 states (~1, ~2, ~3, ~4)"),
                         ("keys+power-cut:3~1:2", every), ("keys+power-cut:3~1:999~1", "no point 999")):
        code, out, err = cli("explain", bad)
        assert (code, out) == (2, "") and problem in err, bad
    code, out, err = cli("explain", "keys:3~1:2~1")
    assert code == 2 and "~S names the state a death left under a fault that leaves several" in err
