"""Fault models: the person answers wrong, and only the loops that must ask the person pay for it.

`crashlab sweep --fault wrong-answer` runs, for every question a crash scenario puts to the person,
the scenario with that answer wrong. A wrong "no" makes a keyless loop redo the call (a duplicate);
a wrong "yes, #N" makes it believe the call done (a missing effect, and a result naming a record the
call never made). A loop whose tracker answers lookups never asks, and so never hears a wrong answer.
"""

import json

import pytest
from hypothesis import given

from crashlab.engine.sweep import VARIANTS, memory_stores, sweep_variant
from crashlab.faults import FAULTS, wrong_answers

from .strategies import jobs

ASKING = ["markers", "agent-keyless"]
NEVER_ASKING = ["per-turn", "after-reply", "keys", "keys-markers", "agent-keyed", "agent-lookup"]


@pytest.mark.parametrize("slug", ASKING)
def test_a_wrong_answer_the_loop_keeps_duplicates_or_loses_an_effect(triage, slug):
    swept = wrong_answers(VARIANTS[slug], triage, memory_stores())
    scenarios = list(swept.scenarios())
    assert scenarios and swept.tally.scenarios == len(scenarios)
    for s in scenarios:
        k = int(s.id.rsplit("~", 1)[1])
        assert s.outcome.asks >= k
        harmed = s.outcome.extra or s.outcome.missing
        assert harmed or s.outcome.asks > k, s.id  # harmless only if it died unsaved and was asked again
    assert any(s.outcome.extra for s in scenarios) and any(s.outcome.missing for s in scenarios)
    assert all(set(s.outcome.missing) <= set(s.outcome.wrong) for s in scenarios)  # believed done, wrongly
    assert swept.record()["dups"] == sum(s.outcome.extra for s in scenarios)


@pytest.mark.parametrize("slug", NEVER_ASKING)
def test_a_loop_that_never_asks_the_person_never_hears_a_wrong_answer(triage, slug):
    swept = wrong_answers(VARIANTS[slug], triage, memory_stores())
    assert (swept.tally.scenarios, list(swept.scenarios())) == (0, [])
    assert swept.crash_scenarios == sweep_variant(VARIANTS[slug], triage, memory_stores()).row().scenarios


@given(jobs(harder=False))
def test_on_any_job_the_lookup_rung_spares_the_person_and_so_every_wrong_answer(job):
    for slug in ("keys-markers", "agent-lookup"):
        if VARIANTS[slug].refuses(job) is None:
            assert wrong_answers(VARIANTS[slug], job, memory_stores()).tally.scenarios == 0


def test_faults_lists_every_fault_with_what_it_breaks(cli):
    code, out, err = cli("faults", "--format", "json")
    slugs = ["crash", "power-cut", "tracker-crash", "wrong-answer", "drifting-model", "reused-run-id", "expired-key",
             "late-delivery"]
    assert code == 0 and [f["slug"] for f in json.loads(out)] == list(FAULTS) == slugs
    code, out, err = cli("faults")
    assert code == 0 and out.startswith("crash ") and "\nwrong-answer " in out and "\npower-cut " in out


def test_sweep_fault_wrong_answer_prints_the_rows_and_refuses_what_it_cannot_do(cli):
    code, out, err = cli("sweep", "--fault", "wrong-answer", "--variant", "markers,keys-markers", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys-markers"]["scenarios"] == 0 and rows["markers"]["dups"] > 0
    for extra in (["--kill"], ["--no-share"], ["--check", "results/book.txt"], ["--store", "files"]):
        code, out, err = cli("sweep", "--fault", "wrong-answer", *extra)
        assert (code, out) == (2, "") and f"it takes no {extra[0]}" in err
    code, out, err = cli("sweep", "--fault", "power-switch")
    assert code == 2 and "'power-switch' is not one of 'crash', 'power-cut', 'tracker-crash', 'wrong-answer'" in err
    code, out, err = cli("sweep", "--fault", "wrong-answer", "--variant", "markers", "--list", "missing")
    first = out.splitlines()[0].split()
    assert code == 0 and first[0].endswith(("~1", "~2")) and first[-2:] == ["--fault", "wrong-answer"]


def test_explain_replays_the_wrong_answer_and_says_so(cli):
    code, out, err = cli("explain", "markers:1:7~1")
    assert code == 0 and "→ yes, #1 (WRONG: the fault wrong-answer)" in out
    for bad, problem in (("markers:1:7~0", "counted from 1"), ("markers:1:7~9", "no question 9"),
                         ("markers:1:7~x", "malformed scenario ID")):
        code, out, err = cli("explain", bad)
        assert (code, out) == (2, "") and problem in err, bad
