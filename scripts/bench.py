"""Time crashlab's sweeps as a user runs them, whole processes, and print the ratios the targets name.

Usage: python scripts/bench.py [--repeat N] [--quick]. Every figure is measured in this one run, on
this machine: wall time (median of N) and peak memory of a `crashlab` process. It prints

- crashlab's whole-process `sweep --variant all` raced against `../shared/bench/refsweep.py`, a peer written
  from scratch in one file, at depths 2 and 3 (medians of interleaved runs), beside the floor any Python
  tool with crashlab's dependencies pays before it sweeps anything;
- sharing against re-execution (`--no-share`) at depth 2 and 3, and the depth-4 sweep of the designs;
- `--workers 2` against `--workers 1`, beside what two processes can gain on this machine at all
  (the same busy loop run alone, then twice at once);
- the growth tables: scenarios, seconds and peak memory against depth, and against jobs of 4 to 32
  changing calls, in process, killed for real, LangGraph and DBOS (`--plot PNG` draws them);
- each fault's sweep (`--fault`), every variant;
- the book table with every process a real one, killed by SIGKILL (`--kill`), shared (each distinct
  state restarted once from a copy of its run directory) beside `--no-share` (every scenario
  re-executed), on one worker and on two;
- the LangGraph agent, the DBOS workflow and a hand-built LangGraph graph with an approval interrupt (a loop
  of yours, `examples/langgraph_approval.py`, swept `--state-in-run-dir`), killed for real on two workers,
  shared beside `--no-share`;
- the agents of examples/agents/, unmodified programs on the official SDKs, swept from outside (`--command`,
  `--job triage`) at depth 2 (CI sweeps them at depth 1), shared beside `--no-share`, and what one process start
  of each costs (the interpreter and its SDK's import, or Node and the openai package's; and each example's, from
  its exec to its model endpoint's first request, what every restart pays);
- the MCP loop with tasks (`examples/mcp_tasks_loop.py`: plain, handle-saving and keyed), killed for real at
  depth 2 (CI sweeps it at depth 1);
- every installed agent runtime's table at depths 1 and 2 (`crashlab frameworks`), which CI sweeps at
  depth 1 only: it takes hours, most of them Temporal's, whose restarts wait on its timeouts.

`--quick` skips the slow re-executed depth-3 sweeps and the runtimes' table, and kills at depth 1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crashlab.loops import VARIANTS

CRASHLAB = [sys.executable, "-m", "crashlab"]
#: The peer: beside this checkout, where CI and a session lay shared/.
PEER = Path(__file__).resolve().parents[2] / "shared" / "bench" / "refsweep.py"
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
    """A job of `changing` changing calls: issues, then a comment on each, four calls a turn, each comment in a
    later turn than its issue (a runtime's scripted model names a call's arguments before the turn runs)."""
    issues = [{"id": f"I{k}", "tool": "create_issue", "args": {"title": f"bug {k}", "body": "b"}}
              for k in range(changing // 2)]
    comments = [{"id": f"C{k}", "tool": "comment", "args": {"issue": f"$I{k}", "body": "b"}}
                for k in range(changing // 2)]
    turns = [{"calls": calls[k:k + 4]} for calls in (issues, comments) for k in range(0, len(calls), 4)]
    path = directory / f"calls-{changing}.yaml"
    path.write_text(json.dumps({"name": f"calls-{changing}", "turns": [*turns, {"answer": "done"}]}))  # JSON is YAML
    return str(path)


#: The sweeps whose cost grows with depth and with the job: each kind a user runs, and how deep each goes here.
KINDS = {
    "in process (the designs)": (("--variant", "all"), (1, 2, 3, 4)),
    "killed (the designs, --kill)": (("--variant", "all", "--kill"), (1, 2, 3)),
    "LangGraph (langgraph-plain, --kill)": (("--loop", "langgraph", "--variant", "langgraph-plain", "--kill"), (1, 2)),
    "DBOS (dbos-plain, --kill)": (("--loop", "dbos", "--variant", "dbos-plain", "--kill"), (1, 2, 3)),
}
#: The same kinds on jobs of more changing calls: the agent's loop (keyed) for crashlab's own kinds.
BY_JOB = {
    "in process (the agent, keyed)": ("--loop", "agent", "--tracker", "keyed"),
    "killed (the agent, keyed, --kill)": ("--loop", "agent", "--tracker", "keyed", "--kill"),
    "LangGraph (langgraph-plain, --kill)": KINDS["LangGraph (langgraph-plain, --kill)"][0],
    "DBOS (dbos-plain, --kill)": KINDS["DBOS (dbos-plain, --kill)"][0],
}


Grown = dict[str, list[tuple[int, int, float, int]]]


def growth(repeat: int, quick: bool) -> tuple[Grown, Grown]:
    """Cost against depth, and against the job's changing calls at depth 2 (1 for the runtimes), shared, one
    worker: a table per kind, and the figures, for `draw`."""
    one = ("--workers", "1")
    by_depth: Grown = {}
    print("\n## growth with depth: the triage job, shared, --workers 1")
    print("| sweep | depth | scenarios | seconds | peak MiB |\n|---|---:|---:|---:|---:|")
    for kind, (options, depths) in KINDS.items():
        for depth in depths[:2] if quick else depths:
            seconds, peak, scenarios = sweep(*options, "--depth", str(depth), *one, repeat=repeat if depth < 3 else 1)
            by_depth.setdefault(kind, []).append((depth, scenarios, seconds, peak))
            print(f"| {kind} | {depth} | {scenarios:,} | {seconds:.2f} | {peak} |")
    by_size: Grown = {}
    print("\n## growth with the job: changing calls, shared, --workers 1 (depth 2; the runtimes at depth 1)")
    print("| sweep | changing calls | scenarios | seconds | peak MiB |\n|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as directory:
        for kind, options in BY_JOB.items():
            depth = "1" if "--loop" in options and options[1] in ("langgraph", "dbos") else "2"
            for changing in (4, 8) if quick else (4, 8, 16, 32):
                job = job_file(Path(directory), changing)
                seconds, peak, scenarios = sweep(*options, "--job", job, "--depth", depth, *one, repeat=1)
                by_size.setdefault(kind, []).append((changing, scenarios, seconds, peak))
                print(f"| {kind} | {changing} | {scenarios:,} | {seconds:.2f} | {peak} |")
    return by_depth, by_size


def draw(by_depth: Grown, by_size: Grown, path: str) -> None:
    """Seconds against scenarios, one line per kind of sweep, one panel for depth and one for the job's size.

    Drawn after every measurement: a process keeps the peak memory of the process it was forked from
    (Linux carries ru_maxrss across execve), and matplotlib makes this one large."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.5), layout="constrained")
    for axes, (title, data) in zip(figure.subplots(1, 2), (
            ("deeper: the triage job, each point its depth", by_depth),
            ("larger: each point the job's changing calls", by_size)), strict=True):
        for kind, points in data.items():
            axes.plot([p[1] for p in points], [p[2] for p in points], marker="o", label=kind)
            for x, n, seconds, _ in points:
                axes.annotate(f"{x}", (n, seconds), textcoords="offset points", xytext=(4, -10), fontsize=7)
        axes.set(xscale="log", yscale="log", xlabel="scenarios", ylabel="seconds, whole process", title=title)
        axes.grid(True, which="major", alpha=0.3)
        axes.legend(fontsize=8)
    FigureCanvasAgg(figure).print_png(path)


def interleaved(commands: dict[str, list[str]], repeat: int) -> dict[str, float]:
    """Each command's median wall seconds, the commands run in turn `repeat` times: a slow spell hits them alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            times[name].append(measure(command, 1)[0])
    return {name: statistics.median(seconds) for name, seconds in times.items()}


def race(repeat: int) -> None:
    """crashlab's whole process against the peer's, and the floor under both: an interpreter that starts, and one
    that imports crashlab's four dependencies (click, PyYAML, tabulate, msgspec) and does nothing."""
    print("## the book's sweep, whole processes, against a peer written from scratch (medians of interleaved runs)")
    if not PEER.is_file():
        print(f"no peer at {PEER}: skipped")
        return
    for depth in ("2", "3"):
        medians = interleaved({"crashlab": [*CRASHLAB, "sweep", "--variant", "all", "--depth", depth],
                               "peer": [sys.executable, str(PEER), "--depth", depth],
                               "python": [sys.executable, "-c", "pass"],
                               "dependencies": [sys.executable, "-c", "import click, yaml, tabulate, msgspec"]},
                              max(repeat, 5))
        print(f"depth {depth}: crashlab {medians['crashlab']:.3f} s, peer {medians['peer']:.3f} s: "
              f"{medians['crashlab'] / medians['peer']:.2f}x; the floor: python {medians['python']:.3f} s, with "
              f"crashlab's dependencies imported {medians['dependencies']:.3f} s")


#: The agents of examples/agents/ (each a plain and a keyed row), and what one process of each imports as it starts.
AGENTS = Path(__file__).resolve().parents[1] / "examples" / "agents"
NODE_OPENAI = "node_modules/openai/index.mjs"
EXAMPLES = {
    "openai (Python)": ([sys.executable, str(AGENTS / "openai_loop.py")], [sys.executable, "-c", "import openai"]),
    "LangGraph ReAct": ([sys.executable, str(AGENTS / "langgraph_react.py")], [sys.executable, "-c", (
        "import langchain_openai, langgraph.prebuilt, langgraph.checkpoint.sqlite")]),
    "OpenAI Agents SDK": ([sys.executable, str(AGENTS / "openai_agents_sdk.py")], [sys.executable, "-c",
                                                                                   "import agents"]),
    "openai (Node)": (["node", str(AGENTS / "node" / "agent.mjs")], [
        "node", "--input-type=module", "-e", f"await import({json.dumps(str(AGENTS / 'node' / NODE_OPENAI))})"]),
}


def examples(depth: str, repeat: int) -> None:
    """The agents of examples/agents/, swept from outside on two workers, shared (`--state-in-run-dir`) beside
    `--no-share`; then one process start of each language, bare and with its SDK imported (medians of interleaved
    runs)."""
    print(f"\n## the agents of examples/agents/ swept from outside (--command, --job triage), depth {depth}, "
          "--workers 2, shared (--state-in-run-dir) against --no-share (needs crashlab[examples] and make's npm ci)")
    for name, (command, _) in EXAMPLES.items():
        line = " ".join(command)
        sweep_ = ("--command", f"plain={line}", "--command", f"keyed={line} --keyed", "--job", "triage",
                  "--depth", depth, "--workers", "2")
        seconds, peak, rows = sweep_rows(*sweep_, "--state-in-run-dir", repeat=1)
        again, again_peak, replayed = sweep_rows(*sweep_, "--no-share", repeat=1)
        assert rows == replayed, "sharing changed a column"
        cells = ", ".join(f"{row['variant']} {row['with_dups']}/{row['dups']}/{row['missing']} calls+ "
                          f"{row['calls_plus']}" for row in rows)
        print(f"{name}: {sum(row['scenarios'] for row in rows):,} scenarios; shared {seconds:.1f} s, peak {peak} MiB; "
              f"--no-share {again:.1f} s ({processes(rows):,} processes), peak {again_peak} MiB: "
              f"{seconds / again:.3f} of the time; with dups/dups/missing: {cells}")
    starts = {"python": [sys.executable, "-c", "pass"], "node": ["node", "-e", ""],
              **{f"{name}, its SDK imported": imports for name, (_, imports) in EXAMPLES.items()}}
    medians = interleaved(starts, max(repeat, 5))
    print("one process start: " + "; ".join(f"{name} {1000 * seconds:.0f} ms" for name, seconds in medians.items()))
    asked = first_requests({name: command for name, (command, _) in EXAMPLES.items()}, max(repeat, 5))
    print("what a process start costs each example, from its exec to its first model request (the floor under each "
          "restart a sweep runs): " + "; ".join(f"{name} {1000 * seconds:.0f} ms" for name, seconds in asked.items()))


def first_requests(commands: dict[str, list[str]], repeat: int) -> dict[str, float]:
    """Each program's median seconds from its exec to the first request its model endpoint receives, the programs
    started in turn `repeat` times, each in an empty directory of its own: a socket stands in for the endpoint,
    and the program is killed once the request has come."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    with socket.create_server(("127.0.0.1", 0)) as endpoint:
        url = f"http://127.0.0.1:{endpoint.getsockname()[1]}"
        env = {**os.environ, "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "bench", "CRASHLAB_TRACKER_URL": url,
               "OPENAI_AGENTS_DISABLE_TRACING": "1"}
        endpoint.settimeout(0.1)
        for _ in range(repeat):
            for name, command in commands.items():
                with tempfile.TemporaryDirectory() as directory:
                    start = time.perf_counter()
                    process = subprocess.Popen(command, cwd=directory, env=env, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    try:
                        connection = accepted(endpoint, process)
                        with connection:
                            connection.recv(1)  # the request's first byte
                            times[name].append(time.perf_counter() - start)
                    finally:
                        process.kill()
                        process.wait()
    return {name: statistics.median(seconds) for name, seconds in times.items()}


def accepted(endpoint: socket.socket, process: subprocess.Popen) -> socket.socket:
    """The first connection to `endpoint`, or, if `process` ends before it makes one, why not."""
    while True:
        try:
            return endpoint.accept()[0]
        except TimeoutError:
            if process.poll() is not None:
                raise SystemExit(f"ended ({process.returncode}) before its first model request: "
                                 f"{' '.join(map(str, process.args))}") from None


def mcp_tasks() -> None:
    """The MCP loop with tasks, its three rows at depth 2: a plain loop duplicates, a handle-saving one only where the
    task was made and its handle not yet received, a keyed one nowhere."""
    loop = ("--loop", "examples/mcp_tasks_loop.py:plain,handle,keyed", "--effects", "examples/http_loop.yaml")
    seconds, peak, rows = sweep_rows(*loop, "--depth", "2", repeat=1)
    cells = ", ".join(f"{row['variant']} {row['with_dups']}/{row['dups']}/{row['missing']}" for row in rows)
    print(f"\n## the MCP loop with tasks (examples/mcp_tasks_loop.py), depth 2, needs crashlab[mcp]\n"
          f"{sum(row['scenarios'] for row in rows):,} scenarios in {seconds:.1f} s, peak {peak} MiB; "
          f"with dups/dups/missing: {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="skip the re-executed depth-3 sweeps")
    parser.add_argument("--plot", metavar="PNG", help="draw the growth with depth and job size into this file")
    args = parser.parse_args()
    r = args.repeat
    one = ("--workers", "1")

    race(r)

    print("\n## sharing against re-execution (whole processes, --workers 1, the five designs)")
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

    grown = growth(r, args.quick)

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
    print(f"\n## every process killed for real (--kill), the five designs, depth {depth}: shared against --no-share")
    for workers in ("1", "2"):
        kill = ("--variant", "all", "--kill", "--depth", depth, "--workers", workers)
        seconds, peak, rows = sweep_rows(*kill, repeat=1)
        again, again_peak, replayed = sweep_rows(*kill, "--no-share", repeat=1)
        assert rows == replayed, "sharing changed a count"
        n, p, distinct = sum(row["scenarios"] for row in rows), processes(rows), sum(row["distinct"] for row in rows)
        print(f"--workers {workers}: {n:,} scenarios ({distinct:,} distinct states): shared {seconds:.1f} s, peak "
              f"{peak} MiB; --no-share {again:.1f} s ({p:,} processes, {1000 * again / p:.2f} ms a process), peak "
              f"{again_peak} MiB: {seconds / again:.3f} of the time")

    print(f"\n## the agent's loop against every tracker, killed for real and re-executed, depth {depth}, --workers 2: "
          "the in-process table (CI re-executes it to depth 1)")
    agent = ("--loop", "agent", "--tracker", "all", "--depth", depth)
    seconds, peak, rows = sweep_rows(*agent, "--kill", "--no-share", "--workers", "2", repeat=1)
    assert rows == sweep_rows(*agent, repeat=1)[2], "killing every process changed a count"
    print(f"{sum(row['scenarios'] for row in rows):,} scenarios ({processes(rows):,} processes): {seconds:.1f} s, "
          f"peak {peak} MiB")

    print(f"\n## frameworks killed for real, depth {depth}, --workers 2, shared against --no-share "
          "(needs crashlab[langgraph,dbos])")
    hand_built = ("--loop", "examples/langgraph_approval.py:plain,keyed",
                  "--effects", "examples/langgraph_approval.yaml", "--state-in-run-dir")
    for loop in (("--loop", "langgraph"), ("--loop", "dbos"), hand_built):
        kill = (*loop, "--kill", "--depth", depth, "--workers", "2")
        seconds, peak, rows = sweep_rows(*kill, repeat=1)
        again, again_peak, replayed = sweep_rows(*kill, "--no-share", repeat=1)
        assert rows == replayed, "sharing changed a column"
        n, distinct = sum(row["scenarios"] for row in rows), sum(row["distinct"] for row in rows)
        cells = ", ".join(f"{row['variant']} {row['with_dups']}/{row['dups']}/{row['missing']}" for row in rows)
        print(f"{loop[1]}: {n:,} scenarios ({distinct:,} distinct states); shared {seconds:.1f} s, peak {peak} MiB; "
              f"--no-share {again:.1f} s, peak {again_peak} MiB: {seconds / again:.3f} of the time; "
              f"with dups/dups/missing: {cells}")

    examples(depth, r)
    mcp_tasks()

    if not args.quick:
        print("\n## every installed agent runtime killed for real at depths 1 and 2 (crashlab frameworks --workers 2)")
        seconds, peak, table = measure([*CRASHLAB, "frameworks", "--depth", "1", "--depth", "2", "--workers", "2"], 1)
        print(f"{seconds / 60:.1f} min, peak {peak} MiB\n{table}")

    if args.plot:
        draw(*grown, args.plot)
        print(f"\n(the growth drawn in {args.plot})")


if __name__ == "__main__":
    main()
