"""A state is everything a restart can read, and two states counted as one are checked, not trusted.

A shared sweep restarts once from each distinct state a death leaves and counts that restart for every
death that left an equal one. The loops here (tests/marker_loop.py, which imports nothing of crashlab's)
keep their attempt marker where crashlab's content once did not look: in an empty directory, in a
``notes-journal`` beside a text file ``notes``, in a database's ``user_version``. Two deaths that differ
only in the marker were one state: the shared sweep counted the restart of the first for the second,
which loses an issue where the first's files it; it said the second scenario lost nothing, and the
re-executed sweep said it did. A marker in a file's modification time, which a state's content leaves
out on purpose, is what the merge check is for: the sweep restarts from both states and refuses the loop.
"""

import json
from types import SimpleNamespace

import pytest

from crashlab.api import sweep
from crashlab.engine.merges import merged
from crashlab.protocols.death import Left
from tests import marker_loop

from .helpers import same_sweep

EFFECTS = {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"}}


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["in_directory", "in_journal", "in_lock", "in_user_version"])
def test_a_marker_wherever_a_restart_reads_it_is_state_and_sharing_counts_what_re_executing_does(entry):
    """Before, `in_journal`, `in_lock` and `in_user_version` counted B lost at scenario 2:1 where re-executing lost
    it at 2 (one state, the marker left out), and `in_directory` was refused: its copies dropped the empty
    directory."""
    loop = getattr(marker_loop, entry)
    shared = sweep(loop, EFFECTS, name=entry, depth=2, state_in_run_dir=True)
    replayed = sweep(loop, EFFECTS, name=entry, depth=2)
    same_sweep(shared, replayed)
    lost = [s.id for s in replayed.scenarios if s.outcome.missing]
    assert lost == [f"{entry.replace('_', '-')}:1:1", f"{entry.replace('_', '-')}:2"]  # the sweep is no empty one
    assert [s.id for s in shared.scenarios if s.outcome.missing] == lost


@pytest.mark.slow
def test_a_loop_whose_states_counted_as_one_restart_differently_is_refused_with_their_difference(cli):
    """The marker in a file's modification time: not content (it differs in every run), so the deaths at points
    1 and 2 are one state; restarted from each, the loop does two things, and the sweep says so in one line."""
    loop = ["--loop", "tests/marker_loop.py:in_mtime", "--effects", "tests/marker_loop.yaml", "--workers", "1"]
    code, out, err = cli("sweep", *loop, "--state-in-run-dir")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert ("in-mtime: the deaths at its points 1 and 2 leave states a shared sweep counts as one, but the restart "
            "after the death at its point 1 passed accepted#1 (start) at its point 1, where the restart after the "
            "death at its point 2 passed nothing more; the states differ in notes (modified 1 ns after the epoch "
            "against 2); sweep it without --state-in-run-dir") in err
    code, out, _ = cli("sweep", *loop, "--format", "json")
    assert code == 0 and json.loads(out)[0]["missing"] == 2  # re-executed, it sweeps as it is



@pytest.mark.slow
def test_a_loop_that_writes_outside_its_run_directory_on_its_word_is_refused_naming_the_path(cli, tmp_path,
                                                                                            monkeypatch):
    """A response cache in a temporary folder: before, the copy check passed it and the shared sweep counted from
    copies that the cache outlived. Each process of a loop on its word may write only in its run directory."""
    monkeypatch.setenv("CACHE_DIR", str(tmp_path))
    loop = ["--loop", "tests/cache_loop.py:triage", "--effects", "tests/marker_loop.yaml", "--depth", "1"]
    code, out, err = cli("sweep", *loop, "--state-in-run-dir")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert (f"--state-in-run-dir: triage: process 1 wrote outside its run directory: PermissionError: [Errno 13] "
            f"Permission denied: '{tmp_path}/responses-") in err
    assert "sweep it without --state-in-run-dir" in err and not list(tmp_path.iterdir())  # refused: nothing written
    code, out, _ = cli("sweep", *loop, "--format", "json")
    assert code == 0 and json.loads(out)[0]["scenarios"] > 0  # on no word, it is re-executed as it is


class State:
    """A state as the check sees it: its fingerprint, and its copy."""

    def __init__(self, fingerprint, copy):
        self.print, self.copy = fingerprint, copy

    def fingerprint(self):
        return self.print

    def unlike(self, other):
        return "" if self.copy == other.copy else f"{self.copy} against {other.copy}"


def test_the_check_restarts_from_the_first_and_last_member_of_the_first_two_classes_whose_copies_differ():
    """The sampling rule (`crashlab.engine.merges`): classes of one member, and classes whose members' copies are
    equal in all, need no check; of the rest, the first two by their first point, each by its ends."""
    states = {1: ("a", "x"), 2: ("b", "y"), 3: ("a", "x"), 4: ("c", "z"), 5: ("b", "y2"), 6: ("c", "z"),
              7: ("b", "y3"), 8: ("d", "w"), 9: ("d", "w2"), 10: ("d", "w3")}
    branches = [SimpleNamespace(crash=j, group=[Left(State(*states[j]))]) for j in states]
    pairs = merged(SimpleNamespace(branches=branches))
    assert [(i, j) for (i, _), (j, _) in pairs] == [(2, 7), (8, 10)]
    assert pairs[0][0][1].durable.unlike(pairs[0][1][1].durable) == "y against y3"
