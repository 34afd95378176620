"""Loops that try to cheat death are caught: each one fails its scenario with a harness error that says why.

A SIGKILL runs no handler, no ``finally`` and no ``__exit__``, and leaves only what was durable.
These loops each break that in one way. Re-executing every scenario (`share=False`, the oracle),
the harness must refuse to count them, on either store, and say which scenario broke which rule,
and where. A shared sweep never raises a crash at all: each restart starts from the snapshot taken
where the crash would be, which is what a SIGKILL leaves, so what a dying loop would still do cannot
reach its table.
"""

import atexit
import itertools
import subprocess
import sys
import threading
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import ClassVar

import pytest
from hypothesis import given

import crashlab
from crashlab.engine.sweep import sweep
from crashlab.errors import Stray
from crashlab.loops import VARIANTS
from crashlab.loops.designs import DESIGNS, DesignLoop
from crashlab.protocols.points import Crash, HarnessError
from crashlab.protocols.scenario import Setup
from crashlab.runners import RunnerSpec
from crashlab.runners.inprocess import InProcess, file_stores, memory_store

from .strategies import jobs

AFTER_REPLY = VARIANTS["after-reply"]


@dataclass(frozen=True)
class Lives:
    """The entry point of a hostile variant: one process of the after-reply design, lived by a hostile loop.

    A module-level class, so the entry pickles for a pool of workers and forks for a real death alike.
    """

    loop_class: type

    def __call__(self, run):
        self.loop_class(DESIGNS["after-reply"], run).run()


def hostile(slug, loop_class, name="hostile"):
    """A variant of the after-reply design whose process is a hostile subclass of its loop."""
    return replace(AFTER_REPLY, slug=slug, name=name, entry=Lives(loop_class))


class RetriesOnAnyError(DesignLoop):
    """Retries a failed call on any Exception: it must not catch its own death."""

    def make_call(self, call, results):
        for _ in range(3):
            try:
                return super().make_call(call, results)
            except Exception:
                continue
        raise RuntimeError("gave up")


class SwallowsItsCrash(DesignLoop):
    """Catches everything around a call, its crash too, and carries on as if the call returned."""

    def make_call(self, call, results):
        try:
            return super().make_call(call, results)
        except BaseException:
            return 0


class ReturnsAfterItsCrash(DesignLoop):
    def run(self):
        try:
            super().run()
        except BaseException:
            return


class SavesInFinally(DesignLoop):
    """Saves whatever it holds on the way out, as a careful-looking loop might."""

    def run(self):
        try:
            super().run()
        finally:
            self.save()


class MutatesInPlace(DesignLoop):
    """Writes each result into the checkpoint it already saved, then saves it again."""

    def save_result(self, call, result):
        self.checkpoint.turns[-1].results[call.id] = result
        self.save()
        crashlab.point("result-saved")


class SavesTheWrongResult(DesignLoop):
    """Saves the record after the one the tracker returned: every later reference goes astray."""

    def make_call(self, call, results):
        result = super().make_call(call, results)
        return result + 1 if call.changes else result


class Nondeterministic(DesignLoop):
    """Every other process saves twice at the start: the same durable state, a different path.

    It alternates rather than tossing a coin, so that the two uninterrupted runs a sweep begins with
    always differ, whatever ran before in this worker.
    """

    lives = itertools.count()

    def resume(self):
        if next(Nondeterministic.lives) % 2:
            self.save()
        super().resume()


class NeverFinishes(DesignLoop):
    def run(self):
        self.store.load()


class FakesItsCrash(DesignLoop):
    def run(self):
        raise Crash("temp", 1)


class StartsAThread(DesignLoop):
    """Saves from a background thread, which a death in process cannot stop."""

    started = threading.Event()

    def run(self):
        threading.Thread(target=self.started.wait, name="saver", daemon=True).start()
        super().run()


class StartsAChild(DesignLoop):
    """Hands work to a child process, which a death in process leaves running."""

    children: ClassVar[list] = []

    def run(self):
        self.children.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]))
        super().run()


class RegistersAtExit(DesignLoop):
    """Saves at exit: in process, that is once, when the sweep ends."""

    def run(self):
        atexit.register(_nothing)
        super().run()


def _nothing():
    pass


@pytest.mark.parametrize("loop_class, says", [
    (StartsAThread, "left a thread running (saver, saver)"),  # the crashed process's and its restart's
    (StartsAChild, "left a child process running (pid "),
    (RegistersAtExit, "registered an atexit handler"),
])
def test_in_process_a_loop_that_leaves_anything_running_after_its_death_is_refused(triage, loop_class, says):
    try:
        with pytest.raises(HarnessError) as error:
            run_scenario(hostile("leaves", loop_class), triage, (5,))
        assert str(error.value).startswith("leaves:5 ") and says in str(error.value)
        assert "sweep the loop forked (--kill)" in str(error.value)
    finally:
        StartsAThread.started.set()
        for child in StartsAChild.children:
            child.kill()
            child.wait()
        atexit.unregister(_nothing)


def test_a_loop_that_joins_its_threads_and_children_before_it_returns_is_counted(triage):
    """Only what is left running is refused: work done and waited for is the loop's own business."""

    class Waits(DesignLoop):
        def run(self):
            thread = threading.Thread(target=lambda: None)
            thread.start()
            thread.join()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            super().run()

    assert run_scenario(hostile("waits", Waits), triage, ()).finished


@pytest.fixture(params=["memory", "files"])
def store(request):
    return request.param


def run_scenario(variant, job, crashes, store="memory"):
    """One scenario of `variant`, re-executed from nothing in this process, on a store of `store`'s kind."""
    with RunnerSpec("in-process", store).open() as runner:
        return runner.scenario(Setup(variant, job), crashes)


def outcomes(variant, job, store="memory", share=False):
    swept = sweep(Setup(variant, job), RunnerSpec("in-process", store), share=share)
    return {s.id.split(":", 1)[1]: s.outcome for s in swept.scenarios()}


def test_a_retry_on_any_error_does_not_survive_its_own_death(triage, store):
    """Crash is a BaseException: the retry never sees it, and the table is after-reply's, scenario by scenario."""
    assert outcomes(hostile("retries", RetriesOnAnyError), triage, store) == outcomes(AFTER_REPLY, triage, store)


def test_a_loop_that_swallows_its_crash_and_goes_on_is_caught_at_its_next_act(triage, store):
    accepted = [e.label for e in run_scenario(AFTER_REPLY, triage, (), store).points.points(1)].index("accepted") + 1
    with pytest.raises(HarnessError) as error:
        run_scenario(hostile("swallows", SwallowsItsCrash), triage, (accepted,), store)
    message = str(error.value)
    assert message.startswith(f"swallows:{accepted}: a checkpoint written after the crash of process 1 at its point")
    assert "(accepted)" in message and "crashlab/loops/life.py" in message


def test_a_loop_that_returns_after_its_crash_is_caught(triage, store):
    with pytest.raises(HarnessError, match=r"returns:5: process 1 died at its point 5 \(renamed\) but its loop "
                                           r"returned: it caught its own Crash"):
        run_scenario(hostile("returns", ReturnsAfterItsCrash), triage, (5,), store)


def test_a_save_in_finally_is_refused_as_written_after_the_crash(triage, store):
    with pytest.raises(HarnessError) as error:
        run_scenario(hostile("finally", SavesInFinally), triage, (6,), store)
    message = str(error.value)
    assert "finally:6: a checkpoint written after the crash of process 1 at its point 6" in message
    assert "test_hostile_loops.py" in message and "in run" in message  # the line of the finally


def test_nothing_a_dead_process_tried_became_durable(triage, store):
    """The refused save wrote nothing: the store holds what it held at the crash."""
    baseline = run_scenario(AFTER_REPLY, triage, (6,), store)
    before = [e for e in baseline.points.events if e.process == 1 and e.kind == "save"]
    points = []
    with file_stores() if store == "files" else nullcontext(memory_store) as factory:
        watched = InProcess(lambda p, sync: points.append(p) or factory(p, sync))  # keeps the scenario's recorder
        with pytest.raises(HarnessError):
            watched.scenario(Setup(hostile("finally", SavesInFinally), triage), (6,))
    assert [e.detail for e in points[0].events if e.kind == "save"] == [e.detail for e in before]


def test_a_loop_that_edits_its_saved_checkpoint_in_place_gets_the_same_table_on_both_stores(triage, store):
    """The store keeps the bytes, not the object: an in-place edit after a save is the loop's own business."""
    assert outcomes(hostile("mutates", MutatesInPlace), triage, store) == outcomes(AFTER_REPLY, triage, store)


def test_a_result_that_names_the_wrong_record_is_counted_wrong(triage, store):
    run = run_scenario(hostile("wrong", SavesTheWrongResult), triage, (), store)
    assert run.outcome(3).wrong == ("A", "B", "C")  # C comments on B's issue, which it never meant
    assert sweep(Setup(AFTER_REPLY, triage), RunnerSpec("in-process", store)).row().wrong == 0


@pytest.mark.parametrize("share", [False, True])
def test_a_nondeterministic_loop_is_reported_not_counted(triage, store, share):
    with pytest.raises(Stray, match=r"^nondeterministic(:\d+)*: the loop is not deterministic: process \d "
                                    r"passed \w[\w-]*#\d+ \(.*\) at its point \d+, where .* passed \w[\w-]*#\d+ "):
        sweep(Setup(hostile("nondeterministic", Nondeterministic), triage), RunnerSpec("in-process", store),
              share=share)


@pytest.mark.parametrize("loop_class", [ReturnsAfterItsCrash, SwallowsItsCrash])
def test_a_shared_sweep_counts_what_a_sigkill_leaves_whatever_the_dying_loop_would_do(triage, loop_class):
    """No crash is raised in a shared sweep, so no handler or finally of a dying process runs: the honest table."""
    assert outcomes(hostile("h", loop_class), triage, share=True) == outcomes(AFTER_REPLY, triage)


def test_a_loop_that_never_finishes_is_caught(triage, store):
    with pytest.raises(HarnessError, match=r"^never: process 1 returned, but the run is not finished"):
        run_scenario(hostile("never", NeverFinishes), triage, (), store)


def test_a_loop_that_raises_crash_itself_is_caught(triage, store):
    with pytest.raises(HarnessError, match="raised Crash without reaching a crash point of its own"):
        run_scenario(hostile("fakes", FakesItsCrash), triage, (), store)


@pytest.mark.parametrize("crashes", [(999,), (6, 999), (999, 5)])
def test_a_crash_that_never_happens_fails_the_scenario(triage, store, crashes):
    with pytest.raises(HarnessError, match=r"never reached its crash point 999"):
        run_scenario(AFTER_REPLY, triage, crashes, store)


def test_every_crash_of_every_sound_scenario_happened_where_it_was_asked(triage):
    """The converse: in every design's double crashes, process k dies at exactly its k-th crash point."""
    for slug in DESIGNS:
        (tree,) = sweep(Setup(VARIANTS[slug], triage), RunnerSpec()).trees
        for i, restart in enumerate(tree.root.after, start=1):
            for j in range(1, len(restart.labels) + 1, 5):
                run = run_scenario(VARIANTS[slug], triage, (i, j))
                assert [(e.process, e.index) for e in run.points.crashes()] == [(1, i), (2, j)]


@given(jobs())
def test_on_any_job_a_crash_is_not_caught_and_an_edit_in_place_is_not_saved(job):
    """What a hostile loop tries is without effect on any job, scenario by scenario."""
    expected = outcomes(AFTER_REPLY, job)
    for share in (False, True):
        assert outcomes(hostile("retries", RetriesOnAnyError), job, share=share) == expected
        assert outcomes(hostile("mutates", MutatesInPlace), job, share=share) == expected
