"""Real deaths: a sweep whose every process is an OS process that SIGKILLs itself gives the in-process table.

The forked runner (`crashlab.runners.forked`) forks each process of a scenario, lets it run against a world in SQLite
and a checkpoint file, and kills it at its crash point; the parent reads every count from the files
afterwards. Held against the in-process sweep (re-executed, the oracle) scenario by scenario: a
difference is a bug in one of the two.
"""

import os
import signal

import pytest
from hypothesis import given, settings

from crashlab.engine.points import HarnessError
from crashlab.engine.scenario import Setup
from crashlab.engine.sweep import sweep
from crashlab.errors import Stray
from crashlab.job import load_job
from crashlab.loops import VARIANTS
from crashlab.loops.designs import DESIGNS, DesignLoop
from crashlab.runners import RunnerSpec
from crashlab.runners import forked as kill
from crashlab.world import TRACKER_MODES

from .conftest import SCENARIOS
from .helpers import results
from .strategies import jobs
from .test_hostile_loops import (
    AFTER_REPLY,
    FakesItsCrash,
    MutatesInPlace,
    NeverFinishes,
    ReturnsAfterItsCrash,
    SavesInFinally,
    SwallowsItsCrash,
    hostile,
)

KILLED = RunnerSpec("forked", "files")
IN_PROCESS = RunnerSpec("in-process", "files")


def scenarios(variant, job, depth=2, killed=True):
    """Every scenario's (ID, points, outcome, hits, saves), killed for real or in process, and the row."""
    swept = sweep(Setup(variant, job), KILLED if killed else IN_PROCESS, depth, share=False)
    return results(swept), swept.row()


def run_scenario(variant, job, crashes, spec=KILLED):
    """One scenario re-executed from nothing: each process forked and SIGKILLed (or, in process, a Crash)."""
    with spec.open() as runner:
        return runner.scenario(Setup(variant, job), crashes)


@pytest.mark.parametrize("slug", ["after-reply", pytest.param("agent-keyless", marks=pytest.mark.slow)])
def test_a_killed_sweep_is_the_in_process_sweep_scenario_by_scenario(triage, slug):
    assert scenarios(VARIANTS[slug], triage, depth=1) == scenarios(VARIANTS[slug], triage, depth=1, killed=False)


@pytest.mark.slow
def test_a_killed_approval_job_counts_its_approvals_from_the_database():
    approval = load_job(SCENARIOS / "approval.yaml")
    killed, row = scenarios(VARIANTS["agent-keyed"], approval, depth=1)
    assert (killed, row) == scenarios(VARIANTS["agent-keyed"], approval, depth=1, killed=False)
    assert row.approvals > 0  # the remembering desk's questions, counted in the database


def test_each_process_of_a_scenario_is_killed_at_its_own_point(triage):
    run = run_scenario(AFTER_REPLY, triage, (6, 3))
    in_process = run_scenario(AFTER_REPLY, triage, (6, 3), RunnerSpec("in-process"))
    crashes = [(e.process, e.index, e.label) for e in run.points.crashes()]
    assert crashes == [(e.process, e.index, e.label) for e in in_process.points.crashes()]
    assert [(p, i) for p, i, _ in crashes] == [(1, 6), (2, 3)]
    assert run.final.finished and run.start == in_process.start


@pytest.mark.parametrize(
    "loop_class",
    [ReturnsAfterItsCrash, *(pytest.param(h, marks=pytest.mark.slow) for h in (SwallowsItsCrash, MutatesInPlace))],
)
def test_what_a_dying_loop_would_still_do_never_runs_under_sigkill(triage, loop_class):
    """No handler and no in-place edit of a dead process counts: the killed table is the honest one."""
    killed, _ = scenarios(hostile("h", loop_class), triage, depth=1)
    assert [s[1:] for s in killed] == [s[1:] for s in scenarios(AFTER_REPLY, triage, depth=1, killed=False)[0]]


def test_a_save_in_finally_never_runs_at_a_sigkill_but_clobbers_the_run_when_it_returns(triage):
    """Killed at its last point, it never saves; its restart finds the run finished, returns, and its finally
    overwrites the finished checkpoint with an empty one: a bug of the loop's own, which the harness names."""
    with KILLED.open() as runner:
        for i in (6, 33):
            assert runner.scenario(Setup(hostile("finally", SavesInFinally), triage), (i,)).final.finished
        with pytest.raises(HarnessError, match=r"^finally:34: process 2 returned, but the run is not finished "
                                               r"\(the durable checkpoint: empty\)"):
            runner.scenario(Setup(hostile("finally", SavesInFinally), triage), (34,))


class NondeterministicAcrossProcesses(DesignLoop):
    """`Nondeterministic`, with a coin no fork can copy (a forked child inherits the parent's random state)."""

    def resume(self):
        if os.urandom(1)[0] < 128:
            self.save()
        super().resume()


def test_a_nondeterministic_loop_is_reported_under_sigkill_too(triage):
    with pytest.raises(Stray, match="the loop is not deterministic"):
        sweep(Setup(hostile("nondeterministic", NondeterministicAcrossProcesses), triage), KILLED, 1, share=False)


def test_a_killed_loop_that_never_finishes_or_never_reaches_its_point_fails_its_scenario(triage):
    with KILLED.open() as runner:
        with pytest.raises(HarnessError, match=r"^never: process 1 returned, but the run is not finished"):
            runner.scenario(Setup(hostile("never", NeverFinishes), triage), ())
        with pytest.raises(HarnessError, match=r"after-reply:6:999: process 2 finished after \d+ crash points and "
                                               r"never reached its crash point 999"):
            runner.scenario(Setup(AFTER_REPLY, triage), (6, 999))


def test_an_error_in_a_killed_process_fails_its_scenario_naming_it(triage):
    with pytest.raises(HarnessError, match=r"^fakes:3: process 1 failed: Crash: crash at point "
                                           r"1 \(temp\) \(test_hostile_loops.py:\d+\)"):
        run_scenario(hostile("fakes", FakesItsCrash), triage, (3,))


def test_a_process_killed_by_something_else_fails_its_scenario(triage, monkeypatch):
    """A death the harness did not ask for (the OOM killer, a user's kill -9) is not counted as a crash."""
    monkeypatch.setattr(kill, "_child", lambda *args: signal.raise_signal(signal.SIGKILL))
    unasked = r"^after-reply:4: process 1 ended .* without a word"
    with pytest.raises(HarnessError, match=unasked):
        run_scenario(AFTER_REPLY, triage, (4,))


@pytest.mark.slow
def test_a_real_death_brings_its_own_files_and_never_shares_a_restart(triage):
    """No store of the caller's outlives a real death: the forked runner keeps each scenario in files of its
    own, whatever store is asked for; and a shared sweep needs snapshots it cannot take, so it re-executes."""
    with RunnerSpec("forked", "memory").open() as runner:
        run = runner.scenario(Setup(AFTER_REPLY, triage), (6,))
        assert run.store.path.is_file() and run.final.finished  # a checkpoint file the killed processes wrote
    assert "snapshots" not in KILLED.offers
    shared = sweep(Setup(AFTER_REPLY, triage), KILLED, 1, share=True)
    assert results(shared) == scenarios(AFTER_REPLY, triage, depth=1)[0]


@pytest.mark.slow
def test_sweep_kill_prints_the_in_process_table(cli):
    args = ("sweep", "--variant", "keys", "--depth", "1", "--format", "json")
    killed = cli(*args, "--kill", "--workers", "2")
    assert killed[0] == 0 and killed == cli(*args)


def test_sweep_kill_refuses_the_memory_store(cli):
    code, out, err = cli("sweep", "--kill", "--store", "memory")
    assert (code, out) == (2, "") and "--kill needs --store files: a memory store cannot outlive a real death" in err


BOOK = [pytest.param(slug, marks=pytest.mark.slow) for slug in DESIGNS]


@pytest.mark.parametrize("slug", BOOK)
def test_the_book_table_killed_for_real_is_the_in_process_table(triage, slug):
    killed = scenarios(VARIANTS[slug], triage)
    assert killed == scenarios(VARIANTS[slug], triage, killed=False)


AGENT_JOBS = [
    pytest.param(name, mode, marks=pytest.mark.slow)
    for name in ("triage", "approval", "server-dies") for mode in TRACKER_MODES
]


@pytest.mark.parametrize("name, mode", AGENT_JOBS)
def test_the_agent_table_killed_for_real_is_the_in_process_table(name, mode):
    job = load_job(SCENARIOS / f"{name}.yaml")
    assert scenarios(VARIANTS[f"agent-{mode}"], job) == scenarios(VARIANTS[f"agent-{mode}"], job, killed=False)


@pytest.mark.slow
@settings(max_examples=8)
@given(jobs(max_turns=2, max_calls=2, harder=True))
def test_on_any_job_a_killed_sweep_is_the_in_process_sweep(job):
    for variant in (VARIANTS["keys-markers"], VARIANTS["agent-lookup"]):
        if variant.refuses(job) is None:
            assert scenarios(variant, job) == scenarios(variant, job, killed=False)
