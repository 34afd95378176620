"""What each loop promises, checked scenario by scenario: the verdict of a campaign and of the tests.

The book's first four designs promise nothing (they are there to show what goes wrong). The last
design and the agent's loop promise no duplicate, nothing lost and no wrong result in any scenario,
and no question to a person unless the tracker can neither honour a key nor be asked about one;
the agent's loop also asks each gated call's approval exactly once. Each variant says what it
promises (`Variant.promises`), so no list here can leave one out.
"""

from __future__ import annotations

from collections.abc import Iterator

from crashlab.job import Job
from crashlab.protocols.scenario import ScenarioResult
from crashlab.protocols.variant import Variant


def broken(variant: Variant, job: Job, result: ScenarioResult) -> Iterator[str]:
    """Each promise the scenario broke, in words; nothing for a variant that makes none."""
    promises = variant.promises
    if promises is None:
        return
    o = result.outcome
    if o.dups:
        yield "duplicated " + ", ".join(f"{call} ×{n + 1}" for call, n in o.dups.items())
    if o.missing:
        yield "lost " + ", ".join(o.missing)
    if o.wrong:
        yield "saved a wrong result for " + ", ".join(o.wrong)
    if o.asks and not promises.may_ask:
        yield f"asked the person {o.asks} time(s)"
    gated = sum(c.needs_approval for c in job.calls)
    if promises.approvals_once and o.approvals != gated:
        yield f"asked {o.approvals} approval(s) for {gated} gated call(s)"
