"""`crashlab sweep --fault all`: every fault at each of its settings, and the matrix of worst outcomes.

A cell is the worst outcome among the fault's scenarios for that loop (stuck, then missing, then
duplicates, then questions; clean if none), with that outcome's count from the fault's own row.
"""

import json

from crashlab.report.matrix import OUTCOMES, column, matrix, worst


def record(**counts):
    row = {"variant": "v", "name": "V", "fault": "power-cut", "setting": "sync file", "scenarios": 5,
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
    assert column(record()) == "power-cut file"
    assert column(record(fault="drifting-model", setting="drift order")) == "drifting-model order"
    assert column(record(fault="expired-key", setting="downtime 1 h or 48 h")) == "expired-key"
    columns, rows = matrix([record(), record(variant="w", name="W", dups=1), record(fault="crash", setting="")])
    assert columns == ["power-cut file", "crash"]
    assert [r["variant"] for r in rows] == ["v", "w"] and rows[1]["power-cut file"] == {"outcome": "dups", "count": 1}


def test_sweep_fault_all_sweeps_every_setting_and_writes_the_matrix(cli, tmp_path):
    out = tmp_path / "faults"
    code, text, err = cli("sweep", "--fault", "all", "--variant", "keys-markers,agent-keyed", "--depth", "1",
                          "--format", "json", "--out", str(out))
    data = json.loads(text)
    assert code == 0 and "swept power-cut (sync none)" in err and f"to {out}/" in err
    faults = [(r["fault"], r["setting"]) for r in data["faults"] if r["variant"] == "agent-keyed"]
    assert len(faults) == 13 and ("drifting-model", "drift order") in faults and ("power-cut", "sync full") in faults
    rows = {r["variant"]: r for r in data["matrix"]}
    assert rows["keys-markers"]["reused-run-id"]["outcome"] == "missing"
    assert rows["agent-keyed"]["power-cut full"] == {"outcome": "clean", "count": 0}
    assert rows["agent-keyed"]["wrong-answer"]["outcome"] == "no scenario"
    assert json.loads((out / "matrix.json").read_text())["rows"] == data["matrix"]
    assert (out / "matrix.png").read_bytes().startswith(b"\x89PNG") and "## the worst outcome" in (
        out / "tables.md").read_text()


def test_sweep_fault_all_refuses_what_only_one_fault_takes(cli):
    for args, problem in ((["--list", "dups"], "give --fault SLUG"), (["--sync", "file"], "it needs --fault power-cut"),
                          (["--drift", "ids"], "it needs --fault drifting-model"), (["--kill"], "it takes no --kill")):
        code, out, err = cli("sweep", "--fault", "all", *args)
        assert (code, out) == (2, "") and problem in err, args


def test_sweep_fault_all_will_not_write_over_a_file(cli, tmp_path):
    blocker = tmp_path / "faults"
    blocker.write_text("mine")
    code, out, err = cli("sweep", "--fault", "all", "--variant", "keys", "--depth", "1", "--out", str(blocker))
    assert (code, out) == (2, "") and "it exists and is not a directory" in err and blocker.read_text() == "mine"
