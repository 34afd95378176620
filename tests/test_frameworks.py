"""`crashlab frameworks`: every installed runtime's promise, quoted, beside what killing it for real measured.

The fast tests hold the command to its inputs and the table to its rows with a stand-in sweep; the
slow one sweeps a real runtime and checks the figures are the sweep's own.
"""

import json
import sys
import types
from dataclasses import replace

import pytest

from crashlab.engine.tree import Row
from crashlab.report import frameworks as report
from crashlab.runtimes import Runtime, runtimes


def test_every_runtime_package_names_its_rows_its_promise_and_where_it_is_written():
    found = runtimes()
    assert {"langgraph", "dbos"} <= set(found)
    for name, runtime in found.items():
        assert runtime.name == name and runtime.rows and runtime.guarantee and runtime.source.startswith("https://")
        assert all(slug.startswith(f"{name}-") for slug in runtime.rows), runtime.rows
        assert set(runtime.notes) <= set(runtime.rows)


def test_every_runtime_package_ships_in_the_wheel_with_its_extra_in_frameworks_or_a_reason():
    import tomllib

    from .conftest import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shipped = project["tool"]["setuptools"]["packages"]
    extras = project["project"]["optional-dependencies"]
    assert "crashlab.runtimes" in shipped
    for name in runtimes():
        assert f"crashlab.runtimes.{name}" in shipped and name in extras, name
    every = extras["frameworks"][0]
    left_out = [name for name in runtimes() if name not in every]
    # crewai needs mcp<2, which the mcp extra's mcp>=2 excludes
    assert left_out == ["crewai"]


def row(slug: str, dups: int) -> Row:
    return Row(variant=slug, name=slug, points=4, by_depth=(4,), distinct=4, windows=1 if dups else 0, dups=dups,
               with_dups=1 if dups else 0)


def test_a_runtime_that_is_not_installed_is_left_out_and_each_row_is_swept_at_each_depth():
    here = Runtime("here", "Here", "pytest", {"here-plain": "p", "here-keyed": "k"}, "at least once", "https://x")
    absent = Runtime("absent", "Absent", "no-such-distribution-anywhere", {"absent-plain": "p"}, "?", "https://y")
    asked = []

    def sweep(runtime, depth):
        asked.append((runtime.name, depth))
        return [row("here-plain", depth), row("here-keyed", 0)]

    measured = report.measure([here, absent], [1, 2], sweep)
    assert asked == [("here", 1), ("here", 2)] and [m.runtime.name for m in measured] == ["here"]
    data = report.records(measured)
    assert data[0]["guarantee"] == "at least once" and data[0]["version"] == measured[0].version
    assert [(r["variant"], r["depths"]["1"]["dups"], r["depths"]["2"]["dups"]) for r in data[0]["rows"]] == [
        ("here-plain", 1, 2), ("here-keyed", 0, 0)]
    printed = report.table(measured)
    assert printed.count("| here-plain") == 2 and 'Here: "at least once" (https://x)' in printed


@pytest.fixture
def partly_installed(monkeypatch) -> dict[str, Runtime]:
    """Two runtimes as the registry has them: LangGraph installed (pytest's distribution standing in for its own)
    without its SQLite checkpointer, the module missing as `pip install langgraph` alone leaves it; and one whose
    loop imports."""
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)  # an import of it fails
    monkeypatch.delitem(sys.modules, "crashlab.runtimes.langgraph.loop", raising=False)
    monkeypatch.setitem(sys.modules, "crashlab.runtimes.ready.loop", types.ModuleType("crashlab.runtimes.ready.loop"))
    ready = Runtime("ready", "Ready", "pytest", {"ready-plain": "p"}, "at least once", "https://x")
    known = {"langgraph": replace(runtimes()["langgraph"], distribution="pytest"), "ready": ready}
    monkeypatch.setattr("crashlab.cli.frameworks.runtimes", lambda: known)
    return known


def test_a_runtime_whose_extra_is_partly_installed_is_left_out_and_named(cli, monkeypatch, partly_installed):
    """langgraph without langgraph-checkpoint-sqlite: `crashlab frameworks` started it, and failed whole."""
    swept = []

    def measure(runtimes, depths, sweep):
        swept.extend(r.name for r in runtimes)
        return [report.Measured(r, "1.0", {1: [row(slug, 0) for slug in r.rows]}) for r in runtimes]

    monkeypatch.setattr(report, "measure", measure)
    code, out, err = cli("frameworks", "--format", "json")
    assert code == 0 and swept == ["ready"] and [r["runtime"] for r in json.loads(out)] == ["ready"]
    assert err.startswith("partly installed, left out: langgraph (") and err.count("\n") == 1, err
    assert err.endswith(": pip install 'crashlab[langgraph]')\n")
    code, out, err = cli("frameworks", "--runtime", "langgraph")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("crashlab: error: partly installed: langgraph (") and "pip install 'crashlab[langgraph]'" in err


@pytest.mark.parametrize(("args", "problem"), [
    (("--runtime", "nope"), "unknown runtime 'nope' (valid: all, "),
    (("--depth", "0"), "0 is not in the range"),
    (("--format", "yaml"), "'yaml' is not one of 'table', 'json'"),
    (("--job", "absent.yaml"), "absent.yaml: no such job file"),
    (("--out", ""), "--out needs a directory name"),
])
def test_bad_input_is_named_in_one_line_with_exit_2(cli, args, problem):
    code, out, err = cli("frameworks", *args)
    assert (code, out) == (2, "") and problem in err and "Traceback" not in err


@pytest.mark.slow
def test_the_table_is_the_sweep_s_own_figures(cli, tmp_path):
    """DBOS at depth 1: the plain row duplicates (at least once), the keyed one never; the same counts as
    `crashlab sweep --loop dbos --kill --depth 1 --no-share` gives (the table re-executes every scenario, for
    its flaky column); --out writes what it printed."""
    code, out, err = cli("frameworks", "--runtime", "dbos", "--format", "json", "--workers", "2",
                         "--out", str(tmp_path / "results"))
    assert code == 0, err
    assert (tmp_path / "results" / "frameworks.json").read_text() == out
    (dbos,) = json.loads(out)
    figures = {r["variant"]: r["depths"]["1"] for r in dbos["rows"]}
    assert figures["dbos-plain"]["dups"] > 0 and figures["dbos-keyed"]["dups"] == 0
    code, swept, _ = cli("sweep", "--loop", "dbos", "--kill", "--depth", "1", "--format", "json", "--workers", "2",
                         "--no-share")
    assert code == 0
    for record in json.loads(swept):
        assert {k: figures[record["variant"]][k] for k in ("scenarios", "dups", "missing", "windows", "distinct")} == {
            k: record[k] for k in ("scenarios", "dups", "missing", "windows", "distinct")}
