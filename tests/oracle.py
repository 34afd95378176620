"""The oracle every fault is held to: a shared sweep counts what re-executing each scenario gives."""

from crashlab.job import Job
from crashlab.loops import VARIANTS
from crashlab.protocols.scenario import Setup, parse_scenario_id

from .helpers import results, runner, swept


def shared_is_re_executed(job: Job, slugs: tuple[str, ...], *under: str, depth: int = 2, sample: int = 300) -> None:
    """Each of `sample` scenarios (spread over the sweep) of each variant: its outcome in the shared sweep
    under the faults named equals running the scenario its ID names, from nothing; and the replayed
    sweep, which finds the scenarios by re-executing each, has the same ones."""
    for slug in slugs:
        shared = swept(slug, job, *under, depth=depth)
        found = list(shared.scenarios())
        assert found, slug
        with runner() as run_one:
            for s in found[:: max(len(found) // sample, 1)]:
                named = parse_scenario_id(s.id, VARIANTS)
                run = run_one.scenario(Setup(named.variant, job, named.faults), named.crashes, named.choices)
                assert (run.id, run.outcome(shared.first.world.model.calls)) == (s.id, s.outcome)
        if len(found) <= 3 * sample:
            assert results(swept(slug, job, *under, depth=depth, share=False)) == results(shared)
