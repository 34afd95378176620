"""Time crashlab's sweeps as a user runs them, whole processes, and print the ratios the targets name.

Usage: python scripts/bench.py [--repeat N] [--quick]. Every figure is measured in this one run, on
this machine: wall time (median of N) and peak memory of a `crashlab` process. It prints

- sharing against re-execution (`--no-share`) at depth 2 and 3, and the depth-4 sweep of the designs;
- `--workers 2` against `--workers 1`, beside what two processes can gain on this machine at all
  (the same busy loop run alone, then twice at once);
- the growth table: scenarios, seconds and peak memory at depths 1 to 4, and for jobs of 4 to 32
  changing calls at depth 2;
- each fault's sweep (`--fault`), every variant;
- the book table with every process a real one, killed by SIGKILL (`--kill`): seconds, and the cost
  per scenario and per process, on one worker and on two;
- the LangGraph agent and the DBOS workflow, killed for real on two workers.

`--quick` skips the slow re-executed depth-3 sweeps, and kills at depth 1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crashlab.loops import VARIANTS

CRASHLAB = [sys.executable, "-m", "crashlab"]
SPIN = [sys.executable, "-c", "x = 0\nfor i in range(10_000_000): x += i"]


EVERY_VARIANT = ",".join(slug for slug, v in VARIANTS.items() if "in-process" in v.runners)


def measure(args: list[str], repeat: int) -> tuple[float, int, str]:
    """Median wall seconds, peak RSS in MiB (the largest of the runs) and the last run's stdout."""
    times, peak, out = [], 0, ""
    for _ in range(repeat):
        with tempfile.TemporaryFile() as stdout:
            start = time.perf_counter()
            process = subprocess.Popen(args, stdout=stdout, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(process.pid, 0)
            times.append(time.perf_counter() - start)
            process.returncode = os.waitstatus_to_exitcode(status)
            if process.returncode != 0:
                raise SystemExit(f"failed ({process.returncode}): {' '.join(args)}")
            peak = max(peak, usage.ru_maxrss // 1024)
            stdout.seek(0)
            out = stdout.read().decode()
    return statistics.median(times), peak, out


def sweep(*options: str, repeat: int) -> tuple[float, int, int]:
    """A `crashlab sweep` as JSON: its seconds, peak MiB and scenario count."""
    seconds, peak, rows = sweep_rows(*options, repeat=repeat)
    return seconds, peak, sum(row["scenarios"] for row in rows)


def sweep_rows(*options: str, repeat: int) -> tuple[float, int, list[dict]]:
    seconds, peak, out = measure([*CRASHLAB, "sweep", "--format", "json", *options], repeat)
    return seconds, peak, json.loads(out)


def processes(rows: list[dict]) -> int:
    """The processes a re-executed sweep runs: k crashes take k + 1; each variant's uninterrupted run, twice."""
    return sum(2 + sum(n * (k + 1) for k, n in enumerate(row["by_depth"], start=1)) for row in rows)


def job_file(directory: Path, changing: int) -> str:
    """A job of `changing` changing calls: issues, then a comment on each, four calls a turn."""
    calls = [{"id": f"I{k}", "tool": "create_issue", "args": {"title": f"bug {k}", "body": "b"}}
             for k in range(changing // 2)]
    calls += [{"id": f"C{k}", "tool": "comment", "args": {"issue": f"$I{k}", "body": "b"}}
              for k in range(changing // 2)]
    turns = [{"calls": calls[k:k + 4]} for k in range(0, len(calls), 4)]
    path = directory / f"calls-{changing}.yaml"
    path.write_text(json.dumps({"name": f"calls-{changing}", "turns": [*turns, {"answer": "done"}]}))  # JSON is YAML
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="skip the re-executed depth-3 sweeps")
    args = parser.parse_args()
    r = args.repeat
    one = ("--workers", "1")

    print("## sharing against re-execution (whole processes, --workers 1, the five designs)")
    for depth in (2, 3):
        if depth == 3 and args.quick:
            continue
        shared = sweep("--variant", "all", "--depth", str(depth), *one, repeat=r)
        replayed = sweep("--variant", "all", "--depth", str(depth), "--no-share", *one, repeat=1 if depth > 2 else r)
        assert shared[2] == replayed[2]
        print(f"depth {depth}: {shared[2]:,} scenarios, shared {shared[0]:.2f} s, --no-share {replayed[0]:.2f} s: "
              f"{shared[0] / replayed[0]:.3f} of the time")
    deep = sweep("--variant", "all", "--depth", "4", *one, repeat=r)
    print(f"depth 4: {deep[2]:,} scenarios, shared {deep[0]:.2f} s, peak {deep[1]} MiB")

    print("\n## --workers 2 against --workers 1, depth 3")
    alone = measure(SPIN, r)[0]
    start = time.perf_counter()
    spinners = [subprocess.Popen(SPIN) for _ in range(2)]
    for s in spinners:
        s.wait()
    together = time.perf_counter() - start
    print(f"this machine: two busy loops at once take {together:.2f} s, one alone {alone:.2f} s: "
          f"at most {2 * alone / together:.2f}x from a second process")
    cases = [("shared", ())] + ([] if args.quick else [("--no-share", ("--no-share",))])
    for name, extra in cases:
        times = [sweep("--variant", "all", "--depth", "3", "--workers", str(w), *extra, repeat=r if not extra else 1)[0]
                 for w in (1, 2)]
        print(f"{name}: --workers 1 {times[0]:.2f} s, --workers 2 {times[1]:.2f} s: {times[0] / times[1]:.2f}x")

    print("\n## growth: the five designs on the triage job, shared, --workers 1")
    print("| depth | scenarios | seconds | peak MiB |\n|---:|---:|---:|---:|")
    for depth in (1, 2, 3, 4):
        seconds, peak, scenarios = sweep("--variant", "all", "--depth", str(depth), *one, repeat=r)
        print(f"| {depth} | {scenarios:,} | {seconds:.2f} | {peak} |")
    print("\n## growth: jobs of more changing calls, depth 2, the agent's loop against the keyed tracker")
    print("| changing calls | scenarios | seconds | peak MiB |\n|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as directory:
        for changing in (4, 8, 16, 32):
            job = job_file(Path(directory), changing)
            seconds, peak, scenarios = sweep("--tracker", "keyed", "--job", job, *one, repeat=r)
            print(f"| {changing} | {scenarios:,} | {seconds:.2f} | {peak} |")


    print("\n## each fault's sweep (--fault), every design and the agent's loop, depth 2, in process")
    cuts = (["power-cut", "--sync", sync] for sync in ("full", "file", "none"))
    commits = (["tracker-crash", "--commit", commit] for commit in ("ack-first", "two-step", "one-txn"))
    drifts = (["drifting-model", "--drift", drift] for drift in ("ids", "order"))
    every = (["wrong-answer"], *drifts, ["reused-run-id"], ["expired-key"], ["late-delivery"], ["timeout"], *commits,
             *cuts)
    for fault in every:
        seconds, peak, rows = sweep_rows("--variant", EVERY_VARIANT, "--fault", *fault, repeat=args.repeat)
        print(f"{' '.join(fault)}: {sum(row['scenarios'] for row in rows):,} scenarios in {seconds:.2f} s, "
              f"peak {peak} MiB")

    depth = "1" if args.quick else "2"
    print(f"\n## every process killed for real (--kill), the five designs, depth {depth}")
    for workers in ("1", "2"):
        seconds, peak, rows = sweep_rows("--variant", "all", "--kill", "--depth", depth, "--workers", workers, repeat=1)
        n, p = sum(row["scenarios"] for row in rows), processes(rows)
        print(f"--workers {workers}: {n:,} scenarios, {p:,} processes in {seconds:.1f} s: "
              f"{1000 * seconds / n:.2f} ms a scenario, {1000 * seconds / p:.2f} ms a process, peak {peak} MiB")


    print(f"\n## frameworks killed for real, depth {depth}, --workers 2 (needs crashlab[langgraph,dbos])")
    for loop in ("langgraph", "dbos"):
        seconds, peak, rows = sweep_rows("--loop", loop, "--kill", "--depth", depth, "--workers", "2", repeat=1)
        n = sum(row["scenarios"] for row in rows)
        cells = ", ".join(f"{row['variant']} {row['with_dups']}/{row['dups']}/{row['missing']}" for row in rows)
        print(f"{loop}: {n:,} scenarios in {seconds:.1f} s ({1000 * seconds / n:.0f} ms a scenario); "
              f"with dups/dups/missing: {cells}")


if __name__ == "__main__":
    main()
