"""The sweep reproduces the published table, on either store, and its invariants hold on any job."""

from dataclasses import astuple

import pytest
from hypothesis import given

from crashlab.job import load_job
from crashlab.loops.designs import DESIGNS
from crashlab.report.golden import compare, read_golden

from .conftest import ROOT, SCENARIOS
from .helpers import swept
from .strategies import jobs


def table(job, store="memory"):
    return [swept(slug, job, store=store).row() for slug in DESIGNS]


@pytest.fixture(scope="module")
def book_rows():
    return table(load_job(SCENARIOS / "triage.yaml"))


def test_the_triage_sweep_reproduces_the_published_table(book_rows):
    """The chapter's TestCrashSweep: every one of the 35 cells, against the golden file."""
    assert compare(book_rows, read_golden(ROOT / "results" / "book.txt")) == []
    assert len(book_rows) == 5


@pytest.mark.slow
def test_the_file_store_gives_the_identical_table(book_rows):
    assert [astuple(r) for r in table(load_job(SCENARIOS / "triage.yaml"), "files")] == [astuple(r) for r in book_rows]


def test_the_golden_check_names_a_differing_cell(tmp_path, book_rows):
    golden = (ROOT / "results" / "book.txt").read_text().replace("|  669 |", "|  670 |")
    (tmp_path / "book.txt").write_text(golden)
    assert compare(book_rows, read_golden(tmp_path / "book.txt")) == [
        "+ attempt markers, no keys / asks: golden 670, swept 669"
    ]


def check_invariants(job):
    rows = {row.variant: row for row in table(job)}
    for slug in ("keys", "markers", "keys-markers"):
        assert rows[slug].dups == rows[slug].with_dups == 0, slug
    assert rows["keys-markers"].asks == 0
    assert all(row.missing == 0 for row in rows.values())
    assert rows["markers"].once == rows["after-reply"].once + 3 * len(job.changing_calls)
    if not job.changing_calls:
        assert all(row.dups == 0 for row in rows.values())
    return rows


@pytest.mark.parametrize("name", ["triage", "one-per-turn", pytest.param("wide", marks=pytest.mark.slow), "read-only"])
def test_the_invariants_hold_on_every_shipped_job(name):
    rows = check_invariants(load_job(SCENARIOS / f"{name}.yaml"))
    if name != "read-only":  # the harness can see a duplicate when there is one to see
        assert rows["after-reply"].dups > 0 and rows["per-turn"].dups > 0


@given(jobs())
def test_the_invariants_hold_on_generated_jobs(job):
    check_invariants(job)
