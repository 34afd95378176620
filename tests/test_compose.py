"""Faults compose, as a Jepsen test composes nemeses: a power cut and a tracker that commits in two steps, in one sweep."""

import pytest

from .helpers import swept
from .oracle import shared_is_re_executed

BOTH = ("power-cut=file", "tracker-crash=two-step")


def test_every_composed_scenario_is_what_re_executing_its_id_gives(triage):
    shared_is_re_executed(triage, ("keys-markers", "agent-lookup"), *BOTH, depth=1, sample=80)


def test_a_composed_death_leaves_each_disk_state_of_a_tracker_that_lost_what_it_had_not_committed(triage):
    alone = swept("keys-markers", triage, "tracker-crash=two-step", depth=1)
    both = swept("keys-markers", triage, *BOTH, depth=1)
    assert both.points == alone.points  # the tracker's own points are the composed run's too
    cuts = swept("keys-markers", triage, "power-cut=file", depth=1)
    assert both.row().once > alone.row().once  # each of those deaths leaves every disk state the syncs allow
    assert all("+power-cut=file+tracker-crash=two-step:" in s.id and len(s.choices[0]) == 1 for s in both.scenarios())
    assert cuts.row().dups == 0 < both.row().dups  # the key the two-step tracker loses makes the repeat a duplicate


@pytest.mark.parametrize("slug", ["agent-keyed", "agent-fencing"])
def test_the_agent_survives_two_faults_it_survives_one_by_one(triage, slug):
    row = swept(slug, triage, "power-cut=full", "tracker-crash=one-txn", depth=2).row()
    assert (row.dups, row.missing, row.wrong, row.stuck) == (0, 0, 0, 0) and row.scenarios > 1000


def test_the_command_line_composes_them_and_names_both_in_every_row_and_id(cli):
    code, out, _ = cli("sweep", "--variant", "keys-markers", "--fault", "power-cut", "--sync", "file", "--fault",
                       "tracker-crash", "--commit", "two-step", "--depth", "1", "--list", "dups")
    first = out.splitlines()[0].split()
    assert code == 0 and first[0].startswith("keys-markers+power-cut=file+tracker-crash=two-step:")
    code, told, _ = cli("explain", first[0])
    assert code == 0 and "the power cut left" in told and "the tracker lost" in told and "(DUPLICATED)" in told
