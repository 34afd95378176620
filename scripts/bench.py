"""Time the whole five-design sweep of the triage job on both stores, and the agent's three rows.

Usage: python scripts/bench.py [--job NAME|FILE] [--repeat N]. Prints the best of N wall times per sweep,
with scenarios per second, crash-point hits and checkpoint saves, so the README's figures can be
checked on any machine. Targets on the project's 2-core machine for the five designs: memory under
1 s, files under 10 s.
"""

from __future__ import annotations

import argparse
import time

from crashlab.designs import DESIGNS
from crashlab.job import find_job
from crashlab.sweep import AGENTS, stores, sweep_variant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", default="triage", help="a shipped job's name or a job file")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    job = find_job(args.job)
    for loop, variants in (("designs", DESIGNS), ("agent", AGENTS)):
        for kind in ("memory", "files"):
            measure(loop, kind, list(variants.values()), job, args.repeat)


def measure(loop: str, kind: str, variants: list, job, repeat: int) -> None:
    best = float("inf")
    for _ in range(repeat):
        with stores(kind) as factory:
            start = time.perf_counter()
            sweeps = [sweep_variant(variant, job, factory) for variant in variants]
            best = min(best, time.perf_counter() - start)
    results = [result for s in sweeps for result in s.scenarios]
    hits, saves = sum(r.hits for r in results), sum(r.saves for r in results)
    print(f"{loop:7} {kind:6} store: {len(results)} scenarios ({hits} crash-point hits, {saves} saves) "
          f"in {best:.3f} s (best of {repeat}), {len(results) / best:,.0f} scenarios/s")


if __name__ == "__main__":
    main()
