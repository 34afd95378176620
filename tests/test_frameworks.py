"""`crashlab frameworks`: every installed runtime's promise, quoted, beside what killing it for real measured.

The fast tests hold the command to its inputs and the table to its rows with a stand-in sweep; the
slow one sweeps a real runtime and checks the figures are the sweep's own.
"""

import json
import sys
import types
from dataclasses import replace

import pytest

from crashlab.cli.options import command_setups, runner_for
from crashlab.engine.tree import Row
from crashlab.job import find_job
from crashlab.report import frameworks as report
from crashlab.runtimes import EXAMPLES, SDK, Agent, Runtime, frameworks, runtimes


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
    monkeypatch.setattr("crashlab.cli.frameworks.every", lambda: known)
    return known


def test_a_runtime_whose_extra_is_partly_installed_is_left_out_and_named(cli, monkeypatch, partly_installed):
    """langgraph without langgraph-checkpoint-sqlite: `crashlab frameworks` started it, and failed whole."""
    swept = []

    def measure(runtimes, depths, sweep):
        swept.extend(r.name for r in runtimes)
        return [report.Measured(r, "1.0", {1: [row(slug, 0) for slug in r.rows]}) for r in runtimes]

    monkeypatch.setattr(report, "measure", measure)
    for every in ((), ("--runtime", "all")):  # the default, and what the list of valid runtimes calls it
        swept.clear()
        code, out, err = cli("frameworks", "--format", "json", *every)
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


# The agents of examples/agents/, swept from outside (`crashlab sweep --command`) beside the rows crashlab's adapter of
# each runtime sweeps, and under the SDKs that are no runtime; the table's `swept as` column tells the two apart.


def test_a_runtimes_agent_has_rows_swept_as_a_command_beside_its_adapters_and_an_sdk_promises_nothing():
    agent = Agent("here-agent", "here_agent.py")
    here = Runtime("here", "Here", "pytest", {"here-plain": "p"}, "at least once", "https://x", agent=agent)
    sdk = SDK("bare", "Bare SDK", "pytest", {}, "", "https://y", agent=Agent("bare", "bare.py"))
    measured = [report.Measured(here, "1.0", {1: [row("here-plain", 2), row("here-agent-plain", 3),
                                                  row("here-agent-keyed", 0)]}),
                report.Measured(sdk, "2.0", {1: [row("bare-plain", 1), row("bare-keyed", 0)]})]
    data = report.records(measured)
    assert [(r["variant"], r["swept_as"], r["setting"], r["depths"]["1"]["dups"]) for d in data for r in d["rows"]] == [
        ("here-plain", "adapter", "", 2),
        ("here-agent-plain", "command", "python examples/agents/here_agent.py", 3),
        ("here-agent-keyed", "command", "python examples/agents/here_agent.py --keyed", 0),
        ("bare-plain", "command", "python examples/agents/bare.py", 1),
        ("bare-keyed", "command", "python examples/agents/bare.py --keyed", 0)]
    lines = report.table(measured).splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:6]] == ["runtime", "version", "row", "swept as", "setting"]
    assert [[c.strip() for c in line.split("|")[3:5]] for line in lines[2:7]] == [
        ["here-plain", "adapter"], ["here-agent-plain", "command"], ["here-agent-keyed", "command"],
        ["bare-plain", "command"], ["bare-keyed", "command"]]
    assert 'Here: "at least once" (https://x)' in lines
    assert "Bare SDK: no runtime, so no promise: its program keeps what it keeps (https://y)" in lines


def test_an_agents_rows_are_the_commands_crashlab_sweep_command_takes_run_by_this_python_or_node():
    python, node = Agent("py", "loop.py"), Agent("js", "node/agent.mjs", ("openai",))
    assert python.commands() == (f"py-plain={sys.executable} {EXAMPLES / 'loop.py'}",
                                 f"py-keyed={sys.executable} {EXAMPLES / 'loop.py'} --keyed")
    assert node.commands()[1] == f"js-keyed=node {EXAMPLES / 'node' / 'agent.mjs'} --keyed"
    assert (python.install, node.install) == ("pip install 'crashlab[examples]'", "npm ci --prefix examples/agents/node")
    assert {name: r.agent.script for name, r in frameworks().items() if r.agent} == {
        "langgraph": "langgraph_react.py", "openai": "openai_agents_sdk.py", "openai-python": "openai_loop.py",
        "openai-node": "node/agent.mjs"}
    for r in frameworks().values():  # every agent named is in examples/agents/
        assert r.agent is None or (EXAMPLES / r.agent.script).is_file()


@pytest.fixture
def stub_sdk(monkeypatch) -> SDK:
    """An SDK whose agent is a program of tests/programs/, which imports nothing of crashlab's: the only heading."""
    from .conftest import ROOT

    monkeypatch.setattr("crashlab.runtimes.EXAMPLES", ROOT / "tests" / "programs")
    sdk = SDK("stub", "Stub SDK", "pytest", {}, "", "https://x", agent=Agent("stub", "triage_agent.py"))
    monkeypatch.setattr("crashlab.cli.frameworks.every", lambda: {"stub": sdk})
    return sdk


def test_an_agent_that_never_asks_the_model_is_refused_not_shown_as_a_clean_row(cli, stub_sdk):
    """triage_agent.py files its issues without a model: swept from outside on the triage job, it would make a row of
    zeros (a key in every request), which says nothing of the model's replies the job scripts."""
    code, out, err = cli("frameworks", "--runtime", "stub", "--format", "json")
    assert (code, out) == (2, "") and err.count("crashlab: error") == 1 and "Traceback" not in err
    assert "stub-plain: its uninterrupted run never asked crashlab's model, which plays job triage" in err


@pytest.fixture
def handed(monkeypatch) -> list[tuple]:
    """What `crashlab frameworks` hands the engine, each sweep's (setups, runner, depth, share), none of them run."""
    handed: list[tuple] = []

    def sweep_all(setups, spec, depth, share, **options):
        handed.append((setups, spec, depth, share))
        return []

    monkeypatch.setattr("crashlab.engine.sweep.sweep_all", sweep_all)
    return handed


def test_a_runtimes_agent_is_swept_with_the_setups_and_runner_crashlab_sweep_command_gives_it(cli, handed):
    pytest.importorskip("langchain_openai")
    code, _, err = cli("frameworks", "--runtime", "langgraph", "--format", "json")
    assert code == 0, err
    ((setups, spec, depth, share),) = handed
    langgraph = runtimes()["langgraph"]
    assert [s.variant.slug for s in setups] == [*langgraph.rows, "langgraph-react-plain", "langgraph-react-keyed"]
    outside = command_setups(langgraph.agent.commands(), None, None, None, job=find_job("triage"))  # sweep's own
    assert setups[-2:] == outside and spec == runner_for([s.variant for s in outside], False, None)
    # re-executed, as `sweep --command` re-executes a program that gave no word that its run directory is all it keeps
    assert depth == 1 and not share and not any(spec.shares(s) for s in outside)


def test_an_agent_that_cannot_run_here_is_named_with_the_command_that_installs_it(cli, monkeypatch, handed):
    monkeypatch.setattr("crashlab.runtimes.npm_version", lambda script, package: None)
    code, out, err = cli("frameworks", "--runtime", "openai-node")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("crashlab: error: not installed: openai-node (npm ci --prefix examples/agents/node)")
    # LangGraph as installed whole (pytest's distribution standing in for its own, its loop for an import that works,
    # as where `make test` has no runtime), its agent importing a module installed nowhere
    langgraph = runtimes()["langgraph"]
    monkeypatch.setitem(sys.modules, "crashlab.runtimes.langgraph.loop", types.ModuleType("stand-in"))
    stranded = replace(langgraph, distribution="pytest",
                       agent=Agent("langgraph-react", "langgraph_react.py", ("no_such_module_anywhere",)))
    monkeypatch.setattr("crashlab.cli.frameworks.every", lambda: {"langgraph": stranded})
    code, out, err = cli("frameworks", "--format", "json")
    assert code == 0 and [s.variant.slug for s in handed[0][0]] == list(langgraph.rows), err
    assert err.endswith("agent cannot run, left out: langgraph's examples/agents/langgraph_react.py (no module "
                        "'no_such_module_anywhere': pip install 'crashlab[examples]')\nsweeping LangGraph at depth 1\n")
    code, out, err = cli("frameworks", "--runtime", "langgraph")
    assert (code, out) == (2, "") and err.startswith("crashlab: error: agent cannot run: langgraph's examples/agents/")


@pytest.mark.slow
def test_the_openai_sdks_agent_swept_from_outside_duplicates_as_counted_by_hand_and_its_keyed_form_never(cli, tmp_path):
    """The cheapest heading with an agent (no adapter rows): openai_loop.py plain and keyed at depth 1, re-executed,
    with the hand count of tests/test_examples_agents.py, which sweeps it with `crashlab sweep --command`."""
    from .test_examples_agents import EXAMPLES as COUNTED

    pytest.importorskip("openai")
    code, out, err = cli("frameworks", "--runtime", "openai-python", "--format", "json", "--workers", "2",
                         "--out", str(tmp_path))
    assert code == 0, err
    assert (tmp_path / "frameworks.json").read_text() == out
    (sdk,) = json.loads(out)
    assert (sdk["runtime"], sdk["guarantee"]) == ("openai-python", "")
    found = {r["variant"]: r for r in sdk["rows"]}
    assert {slug: (r["swept_as"], r["setting"]) for slug, r in found.items()} == {
        "openai-python-plain": ("command", "python examples/agents/openai_loop.py"),
        "openai-python-keyed": ("command", "python examples/agents/openai_loop.py --keyed")}
    plain, keyed = found["openai-python-plain"]["depths"]["1"], found["openai-python-keyed"]["depths"]["1"]
    counted = COUNTED["openai_loop.py"][2]
    assert (plain["points"], plain["with_dups"], plain["dups"], plain["missing"], plain["calls_plus"]) == \
        (9, counted.with_dups, counted.dups, 0, counted.calls_plus)
    assert (keyed["points"], keyed["with_dups"], keyed["dups"], keyed["missing"], keyed["flaky"]) == (9, 0, 0, 0, 0)
    assert "| openai-python-plain | command  " in (tmp_path / "frameworks.txt").read_text()
