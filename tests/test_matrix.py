"""`crashlab sweep --fault all`: every fault at each of its settings, and the matrix of worst outcomes.

A cell is the worst outcome among the fault's scenarios for that loop (stuck, then missing, then
duplicates, then questions; clean if none), with that outcome's count from the fault's own row.
"""

import json

from crashlab.protocols.fault import registry
from crashlab.report.matrix import OUTCOMES, column, matrix, worst

from .helpers import faults

#: `--fault all`'s columns for crashlab's own faults: each at each of its settings, in the order of their slugs.
OWN = ["crash", "drifting-model ids", "drifting-model order", "expired-key", "late-delivery", "power-cut none",
       "power-cut file", "power-cut full", "reused-run-id", "tracker-crash ack-first", "tracker-crash two-step",
       "tracker-crash one-txn", "wrong-answer"]


def every_column() -> list[str]:
    """Every installed fault that the matrix holds at each value of its first setting, in the order of their slugs:
    crashlab's own, and any plug-in's."""
    return [f"{slug} {value}".strip() for slug, fault in registry().items() if fault.in_matrix
            for value in (fault.settings[0].choices if fault.settings else ("",))]


def record(**counts):
    row = {"variant": "v", "name": "V", "faults": "power-cut file", "setting": "sync file", "scenarios": 5,
           "stuck": 0, "missing": 0, "dups": 0, "asks": 0}
    return {**row, **counts}


def test_a_cell_is_the_worst_outcome_its_row_counts_with_that_count():
    assert worst(record()) == ("clean", 0)
    assert worst(record(asks=3)) == ("asks", 3)
    assert worst(record(asks=3, dups=2)) == ("dups", 2)
    assert worst(record(asks=3, dups=2, missing=1)) == ("missing", 1)
    assert worst(record(asks=3, dups=2, missing=1, stuck=4)) == ("stuck", 4)
    assert worst(record(scenarios=0)) == ("no scenario", 0)
    assert [kind for kind, _ in OUTCOMES] == ["stuck", "missing", "dups", "asks", "clean", "no scenario"]


def test_columns_name_the_setting_only_where_the_fault_has_one():
    assert faults("power-cut=file").name == "power-cut file" == column(record())
    assert faults("drifting-model=order").name == "drifting-model order"
    assert (faults("expired-key").name, faults("wrong-answer").name, faults().name) == (
        "expired-key", "wrong-answer", "crash")
    assert faults("tracker-crash=two-step", "power-cut=file").name == "power-cut file + tracker-crash two-step"
    assert column(record(faults="drifting-model order", setting="drift order")) == "drifting-model order"
    columns, rows = matrix([record(), record(variant="w", name="W", dups=1), record(faults="crash", setting="")])
    assert columns == ["power-cut file", "crash"]
    assert [r["variant"] for r in rows] == ["v", "w"] and rows[1]["power-cut file"] == {"outcome": "dups", "count": 1}


def test_sweep_fault_all_sweeps_every_setting_and_writes_the_matrix(cli, tmp_path):
    out = tmp_path / "faults"
    code, text, err = cli("sweep", "--fault", "all", "--variant", "keys-markers,agent-keyed", "--depth", "1",
                          "--format", "json", "--out", str(out))
    data = json.loads(text)
    assert code == 0 and "swept power-cut none: " in err and f"to {out}/" in err
    swept = [(r["faults"], r["setting"]) for r in data["faults"] if r["variant"] == "agent-keyed"]
    assert [name for name, _ in swept] == every_column() and [c for c in every_column() if c in OWN] == OWN
    assert ("drifting-model order", "drift order") in swept and ("power-cut full", "sync full") in swept
    rows = {r["variant"]: r for r in data["matrix"]}
    assert rows["keys-markers"]["reused-run-id"]["outcome"] == "missing"
    assert rows["agent-keyed"]["power-cut full"] == {"outcome": "clean", "count": 0}
    assert rows["agent-keyed"]["wrong-answer"]["outcome"] == "no scenario"
    assert json.loads((out / "matrix.json").read_text()) == {"columns": every_column(), "rows": data["matrix"]}
    assert (out / "matrix.png").read_bytes().startswith(b"\x89PNG") and "## the worst outcome" in (
        out / "tables.md").read_text()


def test_sweep_fault_all_refuses_what_only_one_fault_takes(cli):
    one = "--list, --check, --expect, --repeat and JUnit take one fault"
    for args, problem in ((["--list", "dups"], one), (["--check", "results/book.txt"], one),
                          (["--repeat", "2"], one), (["--expect", "expect.yaml"], one), (["--format", "junit"], one),
                          (["--junit", "sweep.xml"], one),
                          (["--sync", "file"], "it takes no other --fault, and no setting"),
                          (["--drift", "ids"], "it takes no other --fault, and no setting"),
                          (["--kill"], "needs world-in-memory, which the forked runner (--kill) does not offer")):
        code, out, err = cli("sweep", "--fault", "all", *args)
        assert (code, out) == (2, "") and problem in err, args


def test_sweep_fault_all_will_not_write_over_a_file(cli, tmp_path):
    blocker = tmp_path / "faults"
    blocker.write_text("mine")
    code, out, err = cli("sweep", "--fault", "all", "--variant", "keys", "--depth", "1", "--out", str(blocker))
    assert (code, out) == (2, "") and "it exists and is not a directory" in err and blocker.read_text() == "mine"
