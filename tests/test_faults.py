"""Fault models: the person answers wrong, and only the loops that must ask the person pay for it.

`crashlab sweep --fault wrong-answer` runs, for every question a crash scenario puts to the person,
the scenario with that answer wrong. A wrong "no" makes a keyless loop redo the call (a duplicate);
a wrong "yes, #N" makes it believe the call done (a missing effect, and a result naming a record the
call never made). A loop whose tracker answers lookups never asks, and so never hears a wrong answer.
"""

import json

import pytest
from hypothesis import given

from crashlab.loops import VARIANTS
from crashlab.protocols.fault import Faults, find, registry

from .helpers import swept
from .strategies import jobs

ASKING = ["markers", "agent-keyless"]
NEVER_ASKING = ["per-turn", "after-reply", "keys", "keys-markers", "agent-keyed", "agent-lookup"]


def question(scenario_id: str) -> int:
    """The K of ``SLUG+wrong-answer=K:I:J``: the question answered wrong."""
    return int(scenario_id.split("+wrong-answer=", 1)[1].split(":", 1)[0])


@pytest.mark.parametrize("slug", ASKING)
def test_a_wrong_answer_the_loop_keeps_duplicates_or_loses_an_effect(triage, slug):
    under = swept(slug, triage, "wrong-answer")
    scenarios = list(under.scenarios())
    assert scenarios and under.tally.scenarios == len(scenarios)
    for s in scenarios:
        k = question(s.id)
        assert s.outcome.asks >= k
        harmed = s.outcome.extra or s.outcome.missing
        assert harmed or s.outcome.asks > k, s.id  # harmless only if it died unsaved and was asked again
    assert any(s.outcome.extra for s in scenarios) and any(s.outcome.missing for s in scenarios)
    assert all(set(s.outcome.missing) <= set(s.outcome.wrong) for s in scenarios)  # believed done, wrongly
    assert under.row().dups == sum(s.outcome.extra for s in scenarios)


@pytest.mark.parametrize("slug", NEVER_ASKING)
def test_a_loop_that_never_asks_the_person_never_hears_a_wrong_answer(triage, slug):
    under = swept(slug, triage, "wrong-answer")
    assert (under.tally.scenarios, list(under.scenarios())) == (0, [])
    crash = swept(slug, triage).row()  # the crash scenarios it starts from: there are some, and none asks
    assert crash.scenarios > 0 and crash.asks == 0
    assert (under.row().scenarios, under.row().points) == (0, crash.points)


@given(jobs(harder=False))
def test_on_any_job_the_lookup_rung_spares_the_person_and_so_every_wrong_answer(job):
    for slug in ("keys-markers", "agent-lookup"):
        if VARIANTS[slug].refuses(job) is None:
            assert swept(slug, job, "wrong-answer").tally.scenarios == 0


def test_faults_lists_every_fault_with_what_it_breaks(cli):
    code, out, _ = cli("faults", "--format", "json")
    slugs = ["crash", "drifting-model", "expired-key", "late-delivery", "power-cut", "reused-run-id", "tracker-crash",
             "wrong-answer"]  # crashlab's own, in the order of their slugs; a plug-in may add more
    listed = [f["slug"] for f in json.loads(out)]
    assert code == 0 and listed == list(registry()) == sorted(listed) and [f for f in listed if f in slugs] == slugs
    assert all(f["breaks"] and f["adds"] for f in json.loads(out))
    code, out, _ = cli("faults")
    assert code == 0 and out.startswith("crash ") and "\nwrong-answer " in out and "\npower-cut " in out


def test_sweep_fault_wrong_answer_prints_the_rows_and_refuses_what_it_cannot_do(cli):
    code, out, err = cli("sweep", "--fault", "wrong-answer", "--variant", "markers,keys-markers", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys-markers"]["scenarios"] == 0 and rows["markers"]["dups"] > 0
    assert rows["markers"]["faults"] == "wrong-answer"
    code, out, err = cli("sweep", "--fault", "wrong-answer", "--kill")
    assert (code, out) == (2, "") and "--fault wrong-answer needs world-in-memory, which the forked runner" in err
    code, out, err = cli("sweep", "--fault", "power-switch")
    assert code == 2 and "'power-switch' is not one of 'crash', 'drifting-model', 'expired-key', 'failed-after-effect', 'interleave', 'late-delivery'" in err
    code, out, err = cli("sweep", "--fault", "wrong-answer", "--variant", "markers", "--list", "missing")
    first = out.splitlines()[0].split()
    assert code == 0 and first[0].startswith("markers+wrong-answer=") and question(first[0]) in (1, 2)
    assert first[-5:] == ["crashlab", "explain", first[0], "--job", "triage"]  # the ID alone replays it


@pytest.mark.parametrize("args", [("--fault", "crash", "--fault", "wrong-answer", "--variant", "keys"),
                                  ("--fault", "wrong-answer", "--variant", "keys,keys-markers", "--format", "json"),
                                  ("--fault", "wrong-answer", "--variant", "keys", "--list", "dups")])
def test_faults_that_make_no_scenario_are_said_not_shown_as_a_table_of_zeros(cli, args):
    """A design that never asks a person gives a wrong answer nothing to break: its table was all zeros, exit 0."""
    code, out, err = cli("sweep", *args)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert " makes no scenario of keys" in err and "in none of its crash scenarios does wrong-answer find anything " \
        "to break, so the table would be all zeros" in err


@pytest.mark.parametrize(("args", "said"), [
    (("--interleavings", "2"), "--interleavings bounds the schedules of --fault interleave: it needs --fault interleave"),
    (("--interleavings", "2", "--fault", "all"), "--fault all sweeps every fault at each of its settings"),
    (("--interleavings", "0", "--fault", "interleave"), "Invalid value for '--interleavings': '0' is not all or a number"),
    (("--interleavings", "many", "--fault", "interleave"), "'many' is not all or a number of schedules from 1 to 10,000"),
])
def test_interleavings_is_refused_without_the_fault_it_bounds_or_out_of_range(cli, args, said):
    code, out, err = cli("sweep", *args)
    assert (code, out) == (2, "") and said in err


def test_interleavings_bounds_the_schedules_of_the_interleave_fault_alone():
    from crashlab.faults.interleave import LIMIT, Interleave, bounded

    faults = bounded(Faults.of([Interleave(), find("late-delivery").configured(None)]), 3)
    assert [getattr(f, "limit", None) for f in faults.members] == [3, None]
    assert Interleave(limit=3) == Interleave() and Interleave().limit == LIMIT  # the bound is no part of an ID


def test_sweep_fault_wrong_answer_replays_stores_and_checks_as_the_crash_sweep_does(cli, tmp_path):
    """--no-share, --store files and --check, refused under a wrong answer before, give the shared sweep's rows."""
    args = ("sweep", "--fault", "wrong-answer", "--variant", "markers,agent-keyless", "--depth", "1")
    code, shared, err = cli(*args, "--format", "json")
    assert code == 0 and json.loads(shared)[0]["scenarios"] > 0
    for extra in (["--no-share"], ["--store", "files"]):
        code, out, err = cli(*args, "--format", "json", *extra)
        assert (code, out) == (0, shared), extra
    code, table, err = cli(*args)
    (tmp_path / "golden.txt").write_text(table)
    code, out, err = cli(*args, "--check", str(tmp_path / "golden.txt"))
    assert (code, out) == (0, table) and "matches" in err
    code, out, err = cli(*args, "--check", "results/book.txt")
    assert code == 1 and "differs: " in err and "the table differs from results/book.txt" in err
    code, out, err = cli(*args, "--out", str(tmp_path / "out"))
    assert code == 0 and json.loads((tmp_path / "out" / "summary.json").read_text()) == json.loads(shared)
    ids = [json.loads(line)["id"] for line in (tmp_path / "out" / "scenarios.jsonl").read_text().splitlines()]
    assert ids and all("+wrong-answer=" in i for i in ids)


def test_explain_replays_the_wrong_answer_and_says_so(cli):
    code, out, err = cli("explain", "markers+wrong-answer=1:1:7")
    assert code == 0 and "→ yes, #1 (WRONG: the tracker says otherwise)" in out
    for bad, problem in (("markers+wrong-answer=0:1:7", "counted from 1"),
                         ("markers+wrong-answer=9:1:7", "its wrong-answer fault never acted in it"),
                         ("markers+wrong-answer=x:1:7", "counted from 1"),
                         ("markers+wrong-answer=1:1:7~x", "malformed scenario ID"),
                         ("markers:1:7~1", "a fault's choice for the whole scenario is its value: SLUG+FAULT=VALUE:I")):
        code, out, err = cli("explain", bad)
        assert (code, out) == (2, "") and problem in err, bad
