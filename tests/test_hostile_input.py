"""Hostile input: every bad job file, golden file, scenario ID, option and output path is refused.

A refusal is exit code 2 (1 for a golden table that differs), exactly one line on stderr that
starts with "crashlab: error:" and names the problem, no traceback, and it comes quickly: before any
sweep, before memory or time run out. The cases that could hang or exhaust memory run as real
subprocesses with a timeout, so a regression fails the test instead of the test run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crashlab.job import JobError, load_job
from crashlab.job.reader import MAX_CALLS, MAX_ISSUE, TEXT_LIMITS

from .conftest import ROOT

#: A one-call job with a hole for the create_issue call's fields; refusals name "turn 1 call 1".
JOB = "name: hostile\nturns:\n  - calls:\n      - {{{call}}}\n  - answer: done\n"
ARGS = "args: {title: t, body: b}"


def job_with(call: str) -> str:
    return JOB.format(call=call)


def issue_call(title: str = "t", body: str = "b", call_id: str = "A", tool: str = "create_issue") -> str:
    return job_with(f"id: {call_id}, tool: {tool}, args: {{title: {title}, body: {body}}}")


def comment_on(issue: str) -> str:
    return job_with(f"id: C, tool: comment, args: {{issue: {issue}, body: b}}")


def search_for(query: str) -> str:
    return job_with(f"id: S, tool: search, args: {{query: {query}}}")


def assert_refused(code: int, out: str, err: str, *messages: str, exit_code: int = 2) -> None:
    assert code == exit_code
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("crashlab: error: ") and "Traceback" not in err
    for message in messages:
        assert message in err


def run(*args: str, cwd: Path = ROOT, timeout: float = 20) -> tuple[int, str, str, float]:
    """crashlab as a real process: (exit code, stdout, stderr, seconds)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "crashlab", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - start


# -- job files: encoding, types, sizes, keys, IDs --------------------------------------------------

HOSTILE_JOBS: dict[str, tuple[str | bytes, str]] = {
    # encoding
    "latin-1": ("name: caf\xe9\nturns: [{answer: a}]\n".encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 9)"),
    "utf-16": ("name: x\n".encode("utf-16"), "not UTF-8 text (byte 0xff at offset 0)"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text"),
    "nul byte": (b"name: x\x00\nturns: []\n", "unacceptable character 0x0"),
    # types: texts must be strings, checked at load, never mid-sweep
    "title int": (issue_call(title="5"), "turn 1 call 1: title must be a string (got an integer)"),
    "title list": (issue_call(title="[1, 2]"), "title must be a string (got a list)"),
    "title null": (issue_call(title="null"), "title must be a string (got null)"),
    "title date": (issue_call(title="2024-01-01"), "title must be a string (got a date)"),
    "title binary": (issue_call(title="!!binary aGVsbG8="), "title must be a string (got binary data)"),
    "body mapping": (issue_call(body="{a: 1}"), "body must be a string (got a mapping)"),
    "query int": (search_for("5"), "query must be a string (got an integer)"),
    "query null": (search_for("null"), "query must be a string (got null)"),
    "query list": (search_for("[login]"), "query must be a string (got a list)"),
    "tool list": (job_with(f"id: A, tool: [create_issue], {ARGS}"), "tool must be a string (got a list)"),
    "tool no name": (job_with(f"id: A, tool: 'delete repo', {ARGS}"), "tool 'delete repo' is none of crashlab's"),
    "tool of its own": (job_with(f"id: A, tool: delete_repo, {ARGS}"), "'delete_repo', a tool of a program's own, "
                                                                       "which only a program (--command) runs"),
    "own args date": (job_with("id: A, tool: delete_repo, args: {at: 2024-01-01}"), "args.at must be JSON"),
    "own flagged": (job_with(f"id: A, tool: delete_repo, {ARGS}, needs_approval: true"),
                    "needs_approval is for crashlab's own tools"),
    "args list": (job_with("id: A, tool: search, args: [q]"), "args must be a mapping (got a list)"),
    "flag string": (job_with(f"id: A, tool: create_issue, {ARGS}, needs_approval: 'yes'"),
                    "needs_approval must be true or false (got a string)"),
    "answer int": ("name: x\nturns: [{answer: 5}]\n", "turn 1: answer must be a string (got an integer)"),
    "turns mapping": ("name: x\nturns: {answer: a}\n", "turns: required, a non-empty list of turns (got a mapping)"),
    "job list": ("- name: x\n", "a job is a mapping with 'name' and 'turns' (got a list)"),
    # issue numbers: positive ints within a tracker's range, never a bool
    "issue zero": (comment_on("0"), "issue 0 is out of range (1..2147483647)"),
    "issue negative": (comment_on("-5"), "issue -5 is out of range"),
    "issue past range": (comment_on(str(MAX_ISSUE + 1)), "issue 2147483648 is out of range"),
    "issue bool": (comment_on("true"), "issue must be an integer or \"$ID\" of an earlier create_issue call (got a boolean)"),
    "issue float": (comment_on("1.5"), "(got a number)"),
    "issue bare id": (comment_on("A"), "issue 'A' must be an integer or \"$ID\""),
    # huge integers are refused while parsing, before Python's int limit is reached
    "5000-digit issue": (comment_on("9" * 5000), "line 4: invalid YAML: an integer of 5000 characters (at most 20)"),
    "5000-digit title": (issue_call(title="9" * 5000), "an integer of 5000 characters"),
    # sizes of texts
    "long title": (issue_call(title="x" * (TEXT_LIMITS["title"] + 1)), "title is 257 characters long (at most 256)"),
    "long body": (issue_call(body="x" * (TEXT_LIMITS["body"] + 1)), "body is 4097 characters long (at most 4096)"),
    "long query": (search_for("q" * 300), "query is 300 characters long (at most 256)"),
    "blank title": (issue_call(title="'  '"), "title must not be blank"),
    "title newline": (issue_call(title='"a\\nb"'), "title holds the character '\\n'"),
    "body control": (issue_call(body='"a\\x1bb"'), "body holds the character '\\x1b'"),
    "body surrogate": (issue_call(body='"a\\ud800"'), "body holds the character '\\ud800'"),
    # duplicate keys, with the line
    "duplicate name": ("name: x\nname: y\nturns: [{answer: a}]\n", "line 2: invalid YAML: duplicate key 'name' (first on line 1)"),
    "duplicate id": (job_with(f"id: A, tool: create_issue, {ARGS}, id: B"), "line 4: invalid YAML: duplicate key 'id'"),
    "unhashable key": ("? [a]\n: b\n", "a mapping key must be a plain value"),
    # the ID grammar: ASCII letters, digits and _.-, starting with a letter or digit, at most 64
    "id blank": (issue_call(call_id="' '"), "id ' ' is not a valid ID: 1 to 64 ASCII letters"),
    "id empty": (issue_call(call_id="''"), "id '' is not a valid ID"),
    "id newline": (issue_call(call_id='"A\\n"'), "id 'A\\n' is not a valid ID"),
    "id control": (issue_call(call_id='"A\\tB"'), "id 'A\\tB' is not a valid ID"),
    "id surrogate": (issue_call(call_id='"A\\ud800"'), "id 'A\\ud800' is not a valid ID"),
    "id not NFC": (issue_call(call_id='"e\\u0301"'), "id 'e\\u0301' is not a valid ID"),
    "id full-width": (issue_call(call_id="Ａ"), "id '\\uff21' is not a valid ID"),
    "id leading dash": (issue_call(call_id="-A"), "id '-A' is not a valid ID"),
    "id too long": (issue_call(call_id="A" * 65), "is not a valid ID"),
    "id int": (issue_call(call_id="1"), "id must be a string (got an integer)"),
    "name blank": ("name: ' '\nturns: [{answer: a}]\n", "name ' ' is not a valid ID"),
    "name missing": ("turns: [{answer: a}]\n", "name: required"),
    "run with space": ("name: x\nrun: my run\nturns: [{answer: a}]\n", "run 'my run' is not a valid ID"),
    # structure
    "nested too deep": ("name: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 32 levels"),
    "two documents": ("name: x\n---\nname: y\n", "line 2: invalid YAML: but found another document"),
    "python tag": ("name: !!python/object/apply:os.system [ls]\n", "could not determine a constructor"),
}


@pytest.mark.parametrize("case", list(HOSTILE_JOBS))
def test_a_hostile_job_is_refused_in_one_line_at_load(cli, tmp_path, case):
    content, message = HOSTILE_JOBS[case]
    path = tmp_path / "job.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    start = time.perf_counter()
    code, out, err = cli("points", "per-turn", "--job", str(path))
    assert time.perf_counter() - start < 2
    assert_refused(code, out, err, f"{path}: ", message)


#: Jobs at the edges of what is allowed: each must load and sweep the same on both stores.
EDGE_JOBS: dict[str, str] = {
    "longest texts": issue_call(title="x" * TEXT_LIMITS["title"], body="y" * TEXT_LIMITS["body"]),
    "unicode texts": issue_call(title="'Grüße, 東京 🎉'", body='"line one\\n\\tline two"'),
    "date-like text": issue_call(title="'2024-01-01'"),
    "highest issue": comment_on(str(MAX_ISSUE)),
    "longest id": issue_call(call_id="A" * 64),
    "id punctuation": issue_call(call_id="a.b_c-1"),
    "an alias": "name: x\nturns:\n  - calls:\n      - {id: A, tool: create_issue, args: {title: &t same, body: *t}}\n"
                "  - answer: a\n",
}


@pytest.mark.parametrize("case", [*EDGE_JOBS, "date title", "5000-digit issue", "id surrogate"])
def test_both_stores_accept_and_refuse_the_same_jobs(cli, tmp_path, case):
    """Loading happens before a store exists, so a job is refused on both or swept on both, alike."""
    content = EDGE_JOBS.get(case) or HOSTILE_JOBS[{"date title": "title date"}.get(case, case)][0]
    path = tmp_path / "job.yaml"
    path.write_text(content)
    results = [cli("sweep", "--variant", "per-turn,agent-keyless", "--format", "json", "--job", str(path),
                   "--store", store) for store in ("memory", "files")]
    assert results[0] == results[1]
    if case in EDGE_JOBS:
        load_job(path)
        assert results[0][0] == 0 and json.loads(results[0][1])[0]["points"] > 0
    else:
        with pytest.raises(JobError):
            load_job(path)
        assert_refused(*results[0])


# -- bounded in time and memory: real processes, with a timeout -----------------------------------

def alias_bomb() -> str:
    """Nine levels of nine aliases each: 9**9 strings if anything expanded it."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
    return "\n".join(lines) + "\nname: x\nturns:\n  - calls: [{id: A, tool: create_issue, args: {title: *a8, body: b}}]\n"


def calls(n: int) -> str:
    """A job of `n` calls, a hundred a reply, each within every other limit."""
    turns = [f"  - calls: [{', '.join(f'{{id: C{k}, tool: search, args: {{query: q}}}}' for k in range(t, min(n, t + 100)))}]"
             for t in range(0, n, 100)]
    return "name: many\nturns:\n" + "\n".join(turns) + "\n  - answer: done\n"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: (d / "bomb.yaml").write_text(alias_bomb()) and d / "bomb.yaml",
         "invalid YAML: more than 100000 values once aliases are expanded"),
        (lambda d: (d / "big.yaml").write_bytes(b"#" * (2 << 20)) and d / "big.yaml",
         "larger than 1 MiB, the most a job file may be"),
        (lambda d: (d / "title.yaml").write_text(issue_call(title="x" * 1_000_000)) and d / "title.yaml",
         "title is 1000000 characters long (at most 256)"),
        (lambda d: os.mkfifo(d / "fifo") or d / "fifo", "not a regular file (a pipe, device or socket)"),
        (lambda d: Path("/dev/zero"), "/dev/zero: not a regular file"),
        (lambda d: d, "is a directory, not a job file"),
        (lambda d: (d / "many.yaml").write_text(calls(MAX_CALLS + 1)) and d / "many.yaml",
         f"turn 11 call 1: a job makes at most {MAX_CALLS} calls in all its turns, and this is one more"),
    ],
    ids=["alias bomb", "2 MiB file", "1 MB title", "fifo", "/dev/zero", "directory", "1,001 calls"],
)
def test_a_job_that_would_exhaust_time_or_memory_is_refused_at_once(tmp_path, make, message):
    # Refused, not worked through: unguarded, each of these hangs or fills memory for far longer than the timeout
    # (a time to beat would belong in a benchmark; a loaded machine took 6.7 s for the 1 MB title).
    code, out, err, _ = run("sweep", "--job", str(make(tmp_path)), timeout=30)
    assert_refused(code, out, err, message)


def test_a_job_of_the_most_calls_the_reader_allows_loads(tmp_path):
    (tmp_path / "most.yaml").write_text(calls(MAX_CALLS))
    assert sum(len(turn.calls) for turn in load_job(tmp_path / "most.yaml").turns) == MAX_CALLS


def test_sigterm_leaves_no_file_store_and_no_partial_results_behind(tmp_path):
    """`timeout` and supervisors send SIGTERM: it unwinds like Ctrl-C, so /dev/shm and --out stay clean."""
    out = tmp_path / "results"
    # Re-executed on one worker, the sweep holds its file store in this process for a few seconds.
    args = ["sweep", "--store", "files", "--no-share", "--workers", "1", "--out", str(out)]
    process = subprocess.Popen([sys.executable, "-m", "crashlab", *args],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    root = None
    deadline = time.monotonic() + 10
    while root is None and time.monotonic() < deadline:  # the sweep is running once it holds a checkpoint open
        for fd in Path(f"/proc/{process.pid}/fd").glob("*"):
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            end = target.find("/", target.find("/crashlab-") + 1)
            if "/crashlab-" in target and end > 0:  # a file in a scratch directory, not the directory its lock holds
                root = Path(target[:end])
                break
    assert root is not None and root.is_dir(), "the sweep never opened a file store"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=10)
    assert process.returncode == 128 + signal.SIGTERM and "Traceback" not in err
    assert not root.exists()
    assert list(tmp_path.iterdir()) == []  # neither results nor the hidden directory they were written in


# -- golden files -----------------------------------------------------------------------------------

BOOK = (ROOT / "results" / "book.txt").read_text()
KEYS_ROW = "| + idempotency keys         |   34 |   654 |         0 |    0 |       0 |    0 |    234 |"
HEAD = "| variant                    | once | twice | with dups | dups | missing | asks | calls+ |"


@pytest.mark.parametrize(
    ("golden", "message"),
    [
        (BOOK.encode("utf-8").replace(b"book", b"b\xf6ok"), "not UTF-8 text"),
        (BOOK.replace("| asks |", "| ask  |"), "unknown column 'ask' (known: once, twice, thrice"),
        (BOOK.replace("| asks |", "| dups |"), "column 'dups' appears twice"),
        (BOOK.replace("| missing |", "| variant |"), "column 'variant' appears twice"),
        (BOOK + KEYS_ROW + "\n", "row '+ idempotency keys' appears twice"),
        (BOOK.replace("|   34 |   654 |         0", "|   ３４ |   654 |         0"), "'\\uff13\\uff14' is not a count"),
        (BOOK.replace("|  669 |", "|  -669 |"), "'-669' is not a count"),
        ("| variant |\n|---|\n| + idempotency keys |\n", "names no column to check"),
        (BOOK.replace("| variant      ", "| design       "), "the first column must be 'variant'"),
        ("no table here\n", "no table found"),
        (KEYS_ROW.replace("|   34 |", "|   34 | 5 |").join([HEAD + "\n", "\n"]), "has 9 cells, the header has 8"),
    ],
    ids=["not utf-8", "unknown column", "repeated column", "repeated variant", "repeated row", "unicode digits",
         "negative", "no column", "first column", "no table", "ragged row"],
)
def test_a_golden_file_that_cannot_vouch_for_a_table_is_refused_before_the_sweep(cli, tmp_path, golden, message):
    path = tmp_path / "golden.txt"
    path.write_bytes(golden if isinstance(golden, bytes) else golden.encode("utf-8"))
    code, out, err = cli("sweep", "--variant", "keys", "--check", str(path))
    assert_refused(code, out, err, f"{path}: ", message)


def test_a_golden_file_that_is_no_regular_file_is_refused(cli, tmp_path):
    os.mkfifo(tmp_path / "fifo")
    for path in ("/dev/zero", str(tmp_path / "fifo"), str(tmp_path / "absent.txt"), str(tmp_path)):
        assert_refused(*cli("sweep", "--variant", "keys", "--check", path), "golden file")


def test_the_golden_check_compares_exactly_the_rows_and_columns_it_names(cli, tmp_path):
    path = tmp_path / "golden.txt"
    path.write_text("| variant | asks | missing |\n|--|--|--|\n| keys | 0 | 0 |\n")  # a slug names a row too
    code, _, err = cli("sweep", "--variant", "keys", "--check", str(path), "--job", "read-only")
    assert code == 0 and err.splitlines()[-1] == f"matches {path}"  # after the line of restarts run twice
    code, _, err = cli("sweep", "--variant", "keys", "--check", "results/book.txt", "--job", "read-only")  # four golden rows not swept
    assert code == 1 and "save once per turn: in the golden file, but not swept" in err
    path.write_text(f"{HEAD}\n{KEYS_ROW}\n")
    code, out, err = cli("sweep", "--variant", "keys,markers", "--check", str(path))
    assert code == 1 and out.count("\n") == 4  # the table is printed, then judged
    assert err.endswith("differs: + attempt markers, no keys: swept, but not in the golden file\n"
                      f"crashlab: error: the table differs from {path} in 1 cell(s)\n")


# -- options, scenario IDs --------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sweep", "--tracker", "nope"), "unknown tracker 'nope' (valid: all, keyed, keyless, lookup, fencing)"),
        (("sweep", "--loop", "agent", "--variant", "nope"), "unknown variant 'nope' (valid: all, per-turn"),
        (("sweep", "--variant", "keys,keys"), "variant 'keys' is named twice"),
        (("sweep", "--tracker", "keyed,keyed"), "tracker 'keyed' is named twice"),
        (("sweep", "--variant", "keys,"), "unknown variant ''"),
        (("sweep", "--variant", ""), "unknown variant ''"),
        (("sweep", "--loop", "designs", "--variant", "agent-keyed"), "--loop designs has no variant 'agent-keyed'"),
        (("sweep", "--loop", "agent", "--variant", "keys"), "--loop agent has no variant 'keys'"),
        (("sweep", "--loop", "designs", "--tracker", "keyed"), "--loop designs has none (drop --loop designs)"),
        (("sweep", "--variant", "keys", "--tracker", "keyed"), "give --variant or --tracker, not both"),
        (("sweep", "--loop", "nope"), "unknown loop 'nope' (valid: designs, agent,"),
        (("sweep", "--format", "xml"), "'xml' is not one of 'table', 'json', 'csv'"),
        (("sweep", "--depth", "0"), "0 is not in the range 1<=x<=8"),
        (("sweep", "--depth", "9"), "9 is not in the range 1<=x<=8"),
        (("sweep", "--depth", "two"), "'two' is not a valid integer"),
        (("sweep", "--job", "nope"), "no job file or shipped job 'nope' (shipped: approval, one-per-turn"),
        (("sweep", "--bogus"), "No such option"),
        (("plot", "--variant", "keys", "--out", "x.gif"), "the extension picks the format, one of .png, .pdf, .svg"),
        (("plot", "--out", "x"), "one of .png, .pdf, .svg"),
        (("points", "nope"), "unknown variant 'nope' (valid: per-turn"),
        (("explain", "keys:１"), "malformed scenario ID 'keys:\\uff11' (expected SLUG:I, SLUG:I:J and so on, in ASCII digits"),
        (("explain", "keys:٣"), "malformed scenario ID 'keys:\\u0663'"),
        (("explain", "keys:3\n"), "malformed scenario ID 'keys:3\\n'"),
        (("explain", "keys"), "scenario 'keys' names no crash: add one, as keys:1"),
        (("explain", "keys::1"), "SLUG is one of per-turn, after-reply, keys, markers, keys-markers, per-turn-keys,"),
        (("sweep", "--sync", "file"), "--sync is the power-cut fault's setting: it needs --fault power-cut"),
        (("sweep", "--fault", "tracker-crash", "--drift", "ids"), "--drift is the drifting-model fault's setting"),
        (("sweep", "--fault", "nope"), "'nope' is not one of 'crash', 'drifting-model',"),
        (("sweep", "--fault", "all", "--fault", "crash"), "--fault all sweeps every fault at each of its settings"),
        (("sweep", "--kill", "--fault", "power-cut"), "--fault power-cut needs page-cache, which the forked runner "
                                                      "(--kill) does not offer; the in-process runner does"),
        (("sweep", "--loop", "dbos", "--kill", "--fault", "reused-run-id"),
         "--fault reused-run-id has no form yet for a loop whose tools call crashlab's service (those that have: "
         "crash, drifting-model, expired-key, failed-after-effect, interleave, late-delivery, power-cut, timeout, "
         "tracker-crash, wrong-answer)"),
        (("sweep", "--loop", "langgraph"), "langgraph-plain runs only under the forked runner (--kill)"),
        (("sweep", "--fault", "tracker-crash", "--fault", "tracker-crash"), "named twice"),
        (("explain", "keys:-1"), "keys passes crash points 1..34 on job triage: no point -1"),
        (("explain", "keys:6:-1"), "the restart of keys:6 on job triage reaches points 1..31: no point -1"),
        (("explain", "keys:" + "9" * 5000), "is out of range for any job"),
        (("explain", "keys:1:2:3:40"), "the restart of keys:1:2:3 on job triage reaches points 1..34: no point 40"),
        (("explain", "keys" + ":1" * 101), "crashes 101 processes: at most 100"),
        (("explain", "nope:1"), "unknown variant 'nope'"),
    ],
)
def test_a_bad_option_or_scenario_id_is_refused_not_ignored(cli, args, message):
    assert_refused(*cli(*args), message)


def test_one_vocabulary_of_variants_for_every_command(cli):
    code, out, _ = cli("sweep", "--variant", "agent-keyed", "--format", "json", "--job", "read-only")
    assert code == 0 and [r["variant"] for r in json.loads(out)] == ["agent-keyed"]
    assert "approvals" in json.loads(out)[0]  # any agent variant brings the agent table's columns
    code, csv, _ = cli("sweep", "--variant", "keys", "--format", "csv", "--job", "read-only")
    assert csv.splitlines()[0] == ("variant,name,faults,setting,points,once,twice,uncrashed,scenarios,distinct,windows,"
                                   "with_dups,dups,missing,wrong,asks,approvals,calls_plus,stuck,orphans,flaky")
    assert cli("sweep", "--tracker", "keyed", "--format", "json", "--job", "read-only")[1] == out
    assert cli("explain", "agent-keyed:9")[0] == cli("points", "agent-keyed")[0] == 0


# -- output paths -----------------------------------------------------------------------------------

def test_an_out_that_cannot_hold_results_is_refused_before_the_sweep(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for out, message in (("", "--out needs a directory name (got an empty one)"),
                         ("/dev/null", "cannot write results to /dev/null: it exists and is not a directory"),
                         (str(blocker), "it exists and is not a directory"),
                         (str(blocker / "results"), f"cannot write results to {blocker / 'results'}: {blocker} is not a directory")):
        start = time.perf_counter()
        assert_refused(*cli("sweep", "--out", out), message)  # `out == ""`: not even the table was printed
        assert time.perf_counter() - start < 1, out


def test_results_go_into_an_existing_directory_whole_and_leave_its_other_files(cli, tmp_path):
    (tmp_path / "book.txt").write_text("golden")
    code, _, err = cli("sweep", "--variant", "keys", "--out", str(tmp_path), "--job", "read-only")
    assert code == 0 and err.splitlines()[-1].startswith("wrote ") and \
        err.endswith(f" scenarios and the table to {tmp_path}/\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.txt", "manifest.json", "receipts.jsonl",
                                                         "scenarios.jsonl", "summary.csv", "summary.json"]
    assert not list(tmp_path.parent.glob(f".{tmp_path.name}.*.tmp"))


def test_the_manifest_hashes_the_bytes_that_were_swept_and_names_the_software(cli, tmp_path):
    import hashlib

    job = tmp_path / "job.yaml"
    job.write_text(issue_call())
    assert cli("sweep", "--variant", "keys", "--job", str(job), "--out", str(tmp_path / "r"))[0] == 0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["job_sha256"] == hashlib.sha256(job.read_bytes()).hexdigest() == load_job(job).sha256
    assert manifest["python"] == ".".join(map(str, sys.version_info[:3]))
    assert set(manifest["dependencies"]) >= {"click", "tabulate", "pyyaml", "tqdm", "msgspec"}


# -- from any directory ------------------------------------------------------------------------------

def test_crashlab_works_from_any_directory_with_the_shipped_jobs(tmp_path):
    code, out, err, _ = run("points", "keys", cwd=tmp_path)
    assert (code, err) == (0, "") and len(out.splitlines()) == 34 + 1
    code, out, err, _ = run(cwd=tmp_path)
    assert (code, err) == (0, "") and out.startswith("Usage: ") and "crashlab jobs" in out
