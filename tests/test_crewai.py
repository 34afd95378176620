"""The job as a CrewAI Flow with ``@persist``, killed for real at every point: what restoring by ID brings back.

These need the `crashlab[crewai]` extra, which `frameworks` leaves out (CrewAI requires mcp<2, the
`mcp` extra mcp>=2): they are skipped where it is not installed, and `make test-slow` runs them in an
environment of their own (`.venv-crewai`). ``@persist`` on the class saves the flow's state after
every method, and ``kickoff(inputs={"id": ...})`` restores the latest save, then runs the flow again
from ``@start``; each method skips the calls whose results the restored state holds. So a plain
flow duplicates exactly where a kill falls between a call's commit in the tracker (``accepted``) and
the save after its method, and nowhere else; keyed with the flow's state ID and the call ID, no
kill may duplicate or lose anything. ``@persist`` on each method instead saves just as often, but
the flow then has no persistence to restore from by ID: a restart repeats every effect before it.
"""

from importlib.util import find_spec

import pytest

from .helpers import sweep_family

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(find_spec("crewai") is None, reason="needs the crewai extra: pip install crashlab[crewai]")]


@pytest.fixture(scope="module")
def swept(triage):
    return {sweep.name: sweep for sweep in sweep_family("crewai", triage)}


def windows(points):
    """Each method's window: from its first commit in the tracker to the save after it (the save's own point
    included: the process dies before writing)."""
    found, begun = [], None
    for k, point in enumerate(points):
        if point.startswith("accepted#") and begun is None:
            begun = k
        elif point.startswith("save#") and begun is not None:
            found.append(range(begun, k + 1))
            begun = None
    return found


def test_a_plain_flow_duplicates_only_between_a_commit_and_the_save_after_its_method(swept, triage):
    plain = swept["crewai-plain"]
    assert len(plain.points) == len(plain.scenarios) and plain.flaky == 0
    steps = windows(plain.points)
    assert len(steps) == 2  # the job's two turns that change the tracker
    dying = {k for k, s in enumerate(plain.scenarios) if s.outcome.dups}
    assert dying == {k for r in steps for k in r}
    for r in steps:  # just after the save, the restored state holds the results: nothing runs again
        assert plain.points[r[-1] + 1].startswith("saved#") and not plain.scenarios[r[-1] + 1].outcome.dups
    assert plain.missing == 0 and plain.dups > len(triage.changing_calls)  # a kill after B's commit redoes A too


def test_keyed_with_the_flow_state_id_and_call_id_no_kill_duplicates_or_loses_anything(swept):
    plain, keyed = swept["crewai-plain"], swept["crewai-keyed"]
    assert keyed.points == plain.points and keyed.flaky == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_persist_on_each_method_restores_nothing_by_id_so_every_earlier_effect_runs_again(swept, triage):
    method = swept["crewai-method"]
    assert method.flaky == 0 and method.missing == 0
    for k, scenario in enumerate(method.scenarios):
        committed = sum(p.startswith("accepted#") for p in method.points[: k + 1])
        assert scenario.outcome.extra == committed, scenario.id
    assert method.points[-1].startswith("saved#") and method.scenarios[-1].outcome.extra == len(triage.changing_calls)


def test_sweep_loop_crewai_needs_kill(cli):
    code, out, err = cli("sweep", "--loop", "crewai")
    assert (code, out) == (2, "") and "crewai-plain runs only under the forked runner (--kill)" in err
