"""The oracle every fault is held to: a shared sweep counts what re-executing each scenario gives."""

from crashlab.engine.sweep import VARIANTS, Faults, StoreFactory, memory_stores, run_scenario, sweep_variant
from crashlab.job import Job


def shared_is_re_executed(job: Job, slugs: tuple[str, ...], faults: Faults, store: StoreFactory | None = None,
                          depth: int = 2, sample: int = 300) -> None:
    """Each of `sample` scenarios (spread over the sweep) of each variant: its outcome in the shared
    sweep under `faults` equals running that scenario, its fault's choices and all, from nothing."""
    store = store or memory_stores()
    for slug in slugs:
        baseline = run_scenario(VARIANTS[slug], job, (), store).world.model.calls
        scenarios = list(sweep_variant(VARIANTS[slug], job, store, depth, faults=faults).scenarios())
        assert scenarios, slug
        for s in scenarios[:: max(len(scenarios) // sample, 1)]:
            run = run_scenario(VARIANTS[slug], job, s.crashes, store, faults, s.choices)
            assert (run.id, run.outcome(job, baseline)) == (s.id, s.outcome)
