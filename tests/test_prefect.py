"""The job as a Prefect 3 flow, killed for real at every point: a task whose result Prefect persisted is not
run again on the flow run's retry; one it had not persisted is, and a key from Prefect's IDs makes that harmless.

They need the `crashlab[prefect]` extra (in `frameworks`, which `make test` installs) and are skipped where it
is not installed. They sweep a job of one call (`one_issue`), and only the three rows whose outcome differs by
design: the points of one task are all they look at, and the triage job's five rows take two minutes.
"""

from importlib.util import find_spec

import pytest

from crashlab.job import parse_job
from crashlab.runners import RunnerSpec

from .helpers import sweep_family

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(find_spec("prefect") is None, reason="needs the prefect extra: pip install crashlab[prefect]")]

ONE_ISSUE = {"name": "one-issue", "description": "one issue, then the answer", "run": "one-issue-1",
             "turns": [{"calls": [{"id": "A", "tool": "create_issue",
                                   "args": {"title": "Login fails on Safari", "body": "A blank page after login."}}]},
                       {"answer": "Filed one issue."}]}

SLUGS = ("prefect-plain", "prefect-persist", "prefect-keyed")


@pytest.fixture(scope="module")
def swept():
    """Each row, killed for real at every point (Prefect is imported when the test runs, not when it is
    collected)."""
    job = parse_job(ONE_ISSUE)
    return {s.name: s for s in sweep_family("prefect", job, slugs=SLUGS, runner=RunnerSpec("forked", limit=300.0))}


def dying(sweep):
    """The points whose kill left a duplicate."""
    return {s.points[0] for s in sweep.scenarios if s.outcome.dups}


def window(points):
    """The points from each tracker commit (`accepted#N`) up to Prefect's write of that task's result."""
    inside, open_ = set(), False
    for point in points:
        open_ = open_ or point.startswith("accepted#")
        if open_ and point.startswith("result-written#"):
            open_ = False
        if open_:
            inside.add(point)
    return inside


def test_with_persisted_results_a_task_runs_again_only_between_its_effect_and_its_result_record(swept):
    persist = swept["prefect-persist"]
    assert persist.flaky == 0 and persist.missing == 0
    assert any(p.startswith("result-written#") for p in persist.points)  # Prefect wrote results: not vacuous
    assert dying(persist) == window(persist.points) != set()


def test_by_default_prefect_persists_nothing_so_a_retried_flow_run_redoes_every_committed_task(swept):
    plain = swept["prefect-plain"]
    assert plain.flaky == 0 and plain.missing == 0
    assert not any(p.startswith("result") for p in plain.points)  # no result is ever written
    first = next(k for k, p in enumerate(plain.points) if p.startswith("accepted#"))
    assert dying(plain) == set(plain.points[first:])


def test_keyed_with_the_tasks_transaction_key_no_kill_duplicates_or_loses_anything(swept):
    keyed, persist = swept["prefect-keyed"], swept["prefect-persist"]
    assert keyed.points == persist.points and keyed.flaky == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])
