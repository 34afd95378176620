"""A campaign: many generated jobs, each swept to a depth, every broken promise reported with its scenario.

This is the workload a cluster exists for: each job is a unit of work, swept whole wherever it
runs, and the verdicts come back in the order of the jobs. Job k of seed S is the same job on every
machine (its random numbers are seeded by ``S:k``), so a violation found on a cluster is found
again here, and written out as a job file that `crashlab explain` takes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from crashlab.check import promises
from crashlab.engine.parallel import pool
from crashlab.engine.sweep import sweep
from crashlab.errors import HarnessError
from crashlab.job import parse_job
from crashlab.job.generate import job_spec
from crashlab.loops import VARIANTS
from crashlab.protocols.scenario import Setup
from crashlab.runners import RunnerSpec

#: Past this many, a job's violations are counted but not listed one by one.
LISTED = 20
#: Every variant that makes promises and runs in process: what a campaign holds to them.
PROMISING = [v for v in VARIANTS.values() if v.promises is not None and "in-process" in v.runners]


@dataclass(frozen=True)
class Violation:
    scenario: str  # a scenario ID, or the variant's slug when the sweep itself failed
    what: str


@dataclass(frozen=True)
class Verdict:
    """One job's campaign result: how many scenarios it took and which promises broke where."""

    name: str
    spec: dict[str, Any]  # the job, as its YAML file says it
    scenarios: int
    broken: int
    violations: tuple[Violation, ...] = field(default=())


def spec_of(seed: int, k: int) -> dict[str, Any]:
    """Job `k` of the campaign seeded `seed`: half of them with servers that die and approvals."""
    rng = random.Random(f"{seed}:{k}")
    return job_spec(rng, max_turns=2, max_calls=3, harder=rng.random() < 0.5, name=f"campaign-{seed}-{k}")


def check(spec: dict[str, Any], depth: int) -> Verdict:
    """Sweep the job under every variant that makes promises, and hold each scenario to them."""
    job = parse_job(spec)
    scenarios, count, listed = 0, 0, []
    for variant in PROMISING:
        if variant.cannot_run(job):
            continue
        try:
            swept = sweep(Setup(variant, job), RunnerSpec(), depth=depth)
        except HarnessError as error:
            count += 1
            listed.append(Violation(variant.slug, f"the sweep failed: {error}"))
            continue
        for result in swept.scenarios():
            scenarios += 1
            for what in promises.broken(variant, job, result):
                count += 1
                if len(listed) < LISTED:
                    listed.append(Violation(result.id, what))
    return Verdict(job.name, spec, scenarios, count, tuple(listed))


#: A campaign's jobs are made and sent this many at a time: a million jobs are never all held at once.
BATCH = 256


def campaign(jobs: int, seed: int, depth: int, workers: int = 1, scheduler: str | None = None,
             done: Callable[[Verdict], None] = lambda v: None) -> list[Verdict]:
    """Every job's verdict, in the order of the jobs, however many workers or machines ran them.

    The jobs are made as they are needed, a batch at a time, and a verdict keeps its job only if it
    broke a promise (the job file is written for those alone).
    """
    verdicts: list[Verdict] = []
    for start in range(0, jobs, BATCH):
        specs = [spec_of(seed, k) for k in range(start, min(start + BATCH, jobs))]
        if workers == 1 and scheduler is None:
            batch = []
            for spec in specs:
                batch.append(check(spec, depth))
                done(batch[-1])
        else:
            batch = pool(workers, scheduler)(partial(check, depth=depth), specs, done)
        verdicts += [v if v.broken else replace(v, spec={}) for v in batch]
    return verdicts
