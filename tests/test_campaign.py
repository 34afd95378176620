"""A campaign sweeps generated jobs and names every broken promise with a job file and a scenario to explain."""

import json
from dataclasses import replace

from crashlab.check import campaign
from crashlab.check.campaign import PROMISING, spec_of
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.protocols.variant import Promises


def test_job_k_of_a_seed_is_the_same_job_every_time():
    assert spec_of(7, 3) == spec_of(7, 3) != spec_of(7, 4)
    assert spec_of(7, 3) != spec_of(8, 3)


def test_every_loop_that_promises_is_held_to_its_promises():
    """The last design and the agent's loop against every kind of tracker, the fencing one included: a
    variant that makes promises cannot be left out, since the campaign asks the registry, not a list."""
    assert {v.slug for v in PROMISING} == {"keys-markers", *FAMILIES["agent"]}
    assert "agent-fencing" in FAMILIES["agent"]


def test_the_loops_that_promise_keep_their_promises_on_generated_jobs(cli, tmp_path):
    code, out, _ = cli("campaign", "--jobs", "6", "--seed", "3", "--out", str(tmp_path / "c"), "--format", "json")
    verdicts = json.loads(out)
    assert code == 0 and len(verdicts) == 6 and all(v["scenarios"] > 0 for v in verdicts)
    assert all(v["broken"] == 0 and v["file"] is None for v in verdicts)
    assert not (tmp_path / "c").exists()  # nothing to report, nothing written


def test_a_broken_promise_is_reported_with_a_job_file_that_explains_it(cli, tmp_path, monkeypatch):
    """Hold the book's after-reply design to the promises it cannot keep: the campaign must catch it."""
    monkeypatch.setattr(campaign, "PROMISING", [replace(VARIANTS["after-reply"], promises=Promises())])
    code, out, _ = cli("campaign", "--jobs", "4", "--seed", "1", "--workers", "1", "--out", str(tmp_path))
    assert code == 1
    line = next(line for line in out.splitlines()[1:] if "duplicated" in line)
    scenario, command = line.split()[0], line[line.index("(crashlab explain") + 1:-1]
    assert scenario.startswith("after-reply:") and command.startswith(f"crashlab explain {scenario} --job {tmp_path}")
    code, story, _ = cli(*command.split()[1:])
    assert code == 0 and "duplicates:" in story and "none" not in story.split("duplicates:")[1].splitlines()[0]


def test_any_number_of_workers_gives_the_same_verdicts(cli, tmp_path):
    args = ("campaign", "--jobs", "4", "--seed", "5", "--depth", "1", "--format", "json", "--out", str(tmp_path))
    assert cli(*args, "--workers", "1") == cli(*args, "--workers", "2")
