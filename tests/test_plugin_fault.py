"""A fault that lives outside crashlab: defined here, registered through the entry-point group crashlab.faults,
and swept from the command line like crashlab's own, composed with them, refused where it cannot compose."""

import json
import subprocess
import sys
from dataclasses import replace
from typing import ClassVar

import pytest

from crashlab.faults import Fault
from crashlab.job import Call
from crashlab.world import Parts, Person, Record

from .conftest import ROOT


class AwayPerson(Person):
    """A person who is away: every "did it happen?" gets no for an answer."""

    def answer(self, call: Call, made: list[Record]) -> int | None:
        return None


class PersonAway(Fault):
    slug = "person-away"
    breaks = "the person on call is away, and every question put to them is answered no"
    adds = "every crash scenario, with nobody to say a call happened"
    replaces: ClassVar[frozenset[str]] = frozenset({"person"})

    def parts(self, parts: Parts) -> Parts:
        return replace(parts, person=AwayPerson)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A distribution, on the path of a crashlab process, whose only content is the entry point of this fault."""
    site = tmp_path_factory.mktemp("site")
    info = site / "crashlab_test_fault-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: crashlab-test-fault\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[crashlab.faults]\nperson-away = tests.test_plugin_fault:PersonAway\n")

    def crashlab(*args: str) -> tuple[int, str, str]:
        done = subprocess.run([sys.executable, "-m", "crashlab", *args], capture_output=True, text=True, timeout=120,
                              cwd=ROOT, env={"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin"})
        return done.returncode, done.stdout, done.stderr

    return crashlab


def test_a_fault_from_another_package_is_listed_with_crashlab_s_own(installed):
    code, out, _ = installed("faults", "--format", "json")
    slugs = [f["slug"] for f in json.loads(out)]
    assert code == 0 and "person-away" in slugs and "power-cut" in slugs


def test_it_sweeps_from_the_command_line_and_breaks_only_the_loops_that_ask(installed):
    code, out, err = installed("sweep", "--fault", "person-away", "--variant", "markers,keys-markers,after-reply",
                               "--format", "json", "--workers", "1")
    rows = {r["variant"]: r for r in json.loads(out)}
    assert code == 0, err
    assert rows["markers"]["faults"] == "person-away"
    assert rows["markers"]["asks"] > 0 and rows["markers"]["dups"] > 0  # "no" to a call that happened: sent again
    assert rows["keys-markers"]["dups"] == rows["keys-markers"]["asks"] == 0  # its ladder never asks
    code, plain, _ = installed("sweep", "--variant", "after-reply", "--format", "json", "--workers", "1")
    assert {k: v for k, v in json.loads(plain)[0].items() if k != "faults"} == \
           {k: v for k, v in rows["after-reply"].items() if k != "faults"}  # a loop that never asks: unchanged


def test_its_scenarios_replay_from_their_id_and_compose_with_crashlab_s_faults(installed):
    code, out, _ = installed("explain", "markers+person-away:8")
    assert code == 0 and "ASKS THE PERSON: Did call A (create_issue) reach the tracker? → no" in out
    code, out, err = installed("sweep", "--fault", "person-away", "--fault", "power-cut", "--sync", "full",
                               "--variant", "markers", "--format", "json", "--workers", "1")
    assert code == 0 and json.loads(out)[0]["faults"] == "person-away + power-cut full", err
    code, out, err = installed("sweep", "--fault", "person-away", "--fault", "wrong-answer", "--variant", "markers")
    assert (code, out) == (2, "")
    assert "--fault person-away and --fault wrong-answer both replace the world's person" in err


def test_without_its_distribution_crashlab_does_not_know_it(cli):
    code, _, err = cli("sweep", "--fault", "person-away")
    assert code == 2 and "'person-away' is not one of 'crash'" in err
