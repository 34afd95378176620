"""The command line: the table for people, JSON and CSV for scripts, one-line errors with exit 2."""

import json
import re
from pathlib import Path

import pytest

from crashlab.loops.designs import DESIGNS
from crashlab.runtimes import runtimes

#: Every runtime's rows, by runtime in alphabetical order: the variants after crashlab's own.
RUNTIME_ROWS = [slug for runtime in runtimes().values() for slug in runtime.rows]


def test_json_gives_the_35_cells_under_the_documented_keys(cli):
    code, out, _ = cli("sweep", "--variant", "all", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["variant"] for r in rows] == list(DESIGNS)
    cells = [r[k] for r in rows for k in ("once", "twice", "with_dups", "dups", "missing", "asks", "calls_plus")]
    assert len(cells) == 35 and all(isinstance(c, int) for c in cells)
    assert rows[3]["name"] == "+ attempt markers, no keys" and rows[3]["asks"] == 669


def test_the_table_uses_the_books_names_and_heads(cli):
    code, out, _ = cli("sweep", "--variant", "per-turn,keys")
    assert code == 0
    lines = out.splitlines()
    heads = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert heads == ["variant", "once", "twice", "distinct", "with dups", "dups", "missing", "wrong", "asks",
                     "calls+"]
    assert "save once per turn" in lines[2] and "+ idempotency keys" in lines[3]


def test_csv_has_a_header_and_one_row_per_variant(cli):
    code, out, _ = cli("sweep", "--variant", "keys", "--format", "csv")
    assert code == 0
    assert out.splitlines() == [
        "variant,name,faults,setting,points,once,twice,uncrashed,scenarios,distinct,windows,with_dups,dups,missing,"
        "wrong,asks,approvals,calls_plus,stuck,orphans,flaky",
        "keys,+ idempotency keys,crash,,34,34,654,0,688,47,0,0,0,0,0,0,0,234,0,0,0",
    ]


def test_check_passes_on_the_book_and_names_each_differing_cell(cli, tmp_path):
    assert cli("sweep", "--check", "results/book.txt")[0] == 0
    bad = tmp_path / "bad.txt"
    bad.write_text(Path("results/book.txt").read_text().replace("|   34 |   654 |       306", "|   35 |   654 |       305"))
    code, _, err = cli("sweep", "--variant", "after-reply", "--check", str(bad))
    assert code == 1
    assert "save after the reply / once: golden 35, swept 34" in err
    assert "save after the reply / with dups: golden 305, swept 306" in err


def test_bad_input_is_one_line_and_exit_2(cli, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    cases = {
        ("sweep", "--variant", "nope"): "unknown variant 'nope' (valid: all, per-turn, after-reply, keys, markers, "
                                        "keys-markers, per-turn-keys, agent-keyed, agent-keyless, agent-lookup, "
                                        f"agent-fencing, {', '.join(RUNTIME_ROWS)})",
        ("sweep", "--job", "absent.yaml"): "absent.yaml: no such job file",
        ("sweep", "--job", str(broken)): "invalid YAML",
        ("sweep", "--store", "disk"): "'disk' is not one of 'memory', 'files'",
    }
    for args, message in cases.items():
        code, out, err = cli(*args)
        assert code == 2, args
        assert out == ""
        assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_explain_and_points_refuse_bad_jobs_in_one_line(cli, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nturns: [\n")
    for command in (("explain", "after-reply:6"), ("points", "after-reply")):
        for job, message in (("absent.yaml", "absent.yaml: no such job file"), (str(broken), "invalid YAML")):
            code, out, err = cli(*command, "--job", job)
            assert (code, out, err.count("\n")) == (2, "", 1) and message in err, command


def test_the_agent_sweep_and_its_own_errors(cli):
    code, out, _ = cli("sweep", "--loop", "agent", "--tracker", "keyed,lookup", "--format", "json")
    rows = json.loads(out)
    assert [r["variant"] for r in rows] == ["agent-keyed", "agent-lookup"]
    assert set(rows[0]) == {"variant", "name", "faults", "setting", "points", "once", "twice", "scenarios",
                            "by_depth", "distinct", "windows", "uncrashed", "with_dups", "dups", "missing", "wrong", "asks",
                            "approvals", "calls_plus", "stuck", "orphans", "flaky"}
    code, _, err = cli("sweep", "--loop", "agent", "--tracker", "sometimes")
    assert code == 2 and "unknown tracker 'sometimes' (valid: all, keyed, keyless, lookup, fencing)" in err
    code, _, err = cli("sweep", "--job", "approval")
    assert code == 2 and "only the agent's own loop handles: use --loop agent" in err


def test_no_progress_bar_leaks_into_output_for_scripts(cli):
    for fmt in ("json", "csv"):
        code, out, err = cli("sweep", "--format", fmt)
        assert code == 0 and err == ""
        assert out.startswith("[" if fmt == "json" else "variant,")


def test_an_unwritable_out_is_one_line_and_exit_2(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = cli("sweep", "--variant", "keys", "--out", str(blocker / "results"))
    assert code == 2 and err.count("\n") == 1 and "cannot write results to" in err


def test_a_design_refuses_the_harder_jobs_in_every_command(cli):
    for command in (("sweep", "--variant", "keys"), ("points", "keys"), ("explain", "keys:3"), ("plot",)):
        code, out, err = cli(*command, "--job", "server-dies")
        assert (code, out, err.count("\n")) == (2, "", 1), command
        assert "only the agent's own loop handles" in err and "Traceback" not in err
    assert cli("explain", "agent-keyed:3", "--job", "server-dies")[0] == 0


def test_plot_writes_the_format_its_extension_names(cli, tmp_path):
    pytest.importorskip("matplotlib")
    for name, magic in (("sweep.svg", b"<?xml"), ("sweep.PDF", b"%PDF")):  # PNG: tests/test_plot.py
        code, out, _ = cli("plot", "--variant", "keys", "--job", "read-only", "--out", str(tmp_path / name))
        assert code == 0 and out == f"wrote {tmp_path / name}\n"
        assert (tmp_path / name).read_bytes().startswith(magic), name


def test_jobs_lists_the_shipped_jobs_for_people_and_scripts(cli):
    code, out, _ = cli("jobs", "--format", "json")
    listed = json.loads(out)
    assert code == 0 and [j["name"] for j in listed][:2] == ["approval", "one-per-turn"]
    assert {"name": "triage", "calls": 4,
            "description": "the chapter's job: two issues, a search, a comment on the first issue"} in listed
    code, out, _ = cli("jobs")
    assert out.splitlines()[0].split() == ["job", "calls", "description"] and len(out.splitlines()) == 7


def test_points_lines_stay_within_the_terminal_width_however_long_the_job(cli, tmp_path, monkeypatch):
    """Output linear in the points: no line is padded to the widest checkpoint, each is cut at the width."""
    calls = ", ".join(f"{{id: S{k}, tool: search, args: {{query: q}}}}" for k in range(200))
    (tmp_path / "wide.yaml").write_text(f"name: many\nturns:\n  - calls: [{calls}]\n  - answer: a\n")
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = cli("points", "keys", "--job", str(tmp_path / "wide.yaml"))
    lines = out.splitlines()
    assert code == 0 and len(lines) > 600 and max(map(len, lines)) == 100
    assert lines[1].split() == ["1", "temp", "#1", "start", "nothing", "|", "-"]  # short lines are not padded
    assert lines[-1].endswith("…")


def test_crashlab_alone_prints_its_help(cli):
    code, out, err = cli()
    assert (code, err) == (0, "") and out.startswith("Usage: crashlab") and "crashlab schema" in out


@pytest.mark.slow
def test_the_progress_bar_counts_scenarios_on_a_real_terminal(tmp_path):
    """On a pseudo-terminal, a sweep longer than a second shows a bar that counts scenarios as they run.

    Re-executing every scenario on the file store makes this one take a few seconds.
    """
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal has a width
    done = subprocess.run(
        [sys.executable, "-c", "from crashlab.cli import main; main()", "sweep", "--loop", "agent", "--job", "approval", "--store", "files",
         "--no-share", "--format", "json"],
        stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL, timeout=120, cwd=tmp_path,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert done.returncode == 0
    assert json.loads(done.stdout)[0]["variant"] == "agent-keyed"  # stdout stays clean JSON
    counts = [(int(count), int(total)) for count, total in re.findall(rb"sweep: .*?\| *(\d+)/(\d+) \[", shown)]
    assert counts and counts == sorted(counts) and 0 < counts[-1][0] <= 6408  # of 1611 + 1593 + 1593 + 1611 scenarios
    assert all(count <= total for count, total in counts)  # against the sweep's estimate, raised where it erred low


def test_sharing_or_not_the_output_is_the_same_to_the_byte(cli):
    for args in (("--variant", "all"), ("--loop", "agent", "--depth", "1", "--job", "approval")):
        shared = cli("sweep", *args, "--format", "json")
        assert shared[0] == 0 and cli("sweep", *args, "--format", "json", "--no-share") == shared


def test_a_deeper_sweep_has_a_column_per_depth_and_counts_them_in_json(cli):
    code, out, _ = cli("sweep", "--variant", "keys", "--depth", "3")
    heads = [cell.strip() for cell in out.splitlines()[0].strip("|").split("|")]
    assert code == 0 and heads[:5] == ["variant", "once", "twice", "thrice", "distinct"]
    code, out, _ = cli("sweep", "--variant", "keys", "--depth", "3", "--format", "json")
    (row,) = json.loads(out)
    assert row["by_depth"] == [34, 654, 9362] and row["scenarios"] == 10050 and row["once"] == 34


# What the command line imports: the commands it lists from one table, each module only when its command runs.


def test_the_commands_table_says_what_each_command_own_help_says():
    import click

    from crashlab.cli import COMMANDS, cli

    context = click.Context(cli)
    for name, (module, said) in COMMANDS.items():
        command = cli.get_command(context, name)
        assert command is not None and command.callback is not None and command.callback.__module__ == module
        assert command.get_short_help_str(limit=1000) == said, name


def imported_by(*args: str) -> set[str]:
    """The modules a fresh interpreter holds after `crashlab ARGS` ran in it, output thrown away."""
    import subprocess
    import sys

    probe = ("import contextlib, io, sys\nfrom crashlab.cli import cli\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    cli.main({list(args)!r}, standalone_mode=False)\n"
             "print(' '.join(sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_crashlab_help_imports_no_command_module_and_a_book_sweep_no_fault_runner_or_service():
    listed = imported_by("--help")
    assert "crashlab.cli" in listed and not {m for m in listed if m.startswith("crashlab.cli.")}
    book = imported_by("sweep", "--variant", "all", "--depth", "1", "--workers", "1")
    assert {"crashlab.cli.sweep", "crashlab.engine.tree", "crashlab.runners.inprocess"} <= book
    unused = {m for m in book if m.startswith(("crashlab.faults.", "crashlab.runners.forked", "crashlab.runners.served",
                                               "crashlab.service.", "crashlab.program", "crashlab.cli.explain"))}
    # an option's bounds (and the search its fault runs); a loop's test
    assert unused <= {"crashlab.faults.interleave", "crashlab.faults.orders", "crashlab.service.yours"}


def test_a_sweep_that_names_a_fault_setting_finds_the_faults_and_one_that_names_none_runs_without_them(cli):
    code, out, err = cli("sweep", "--variant", "keys-markers", "--depth", "1", "--fault", "power-cut", "--sync", "file",
                         "--format", "json")
    assert code == 0 and json.loads(out)[0]["faults"] == "power-cut file"
    code, out, err = cli("sweep", "--variant", "keys-markers", "--depth", "1", "--sync", "file")
    assert code == 2 and "--sync is the power-cut fault's setting: it needs --fault power-cut" in err
    code, out, err = cli("sweep", "--variant", "keys-markers", "--depth", "1", "--format", "json")
    assert code == 0 and json.loads(out)[0]["faults"] == "crash"
