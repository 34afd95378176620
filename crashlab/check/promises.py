"""What each loop promises, checked scenario by scenario: the verdict of a campaign and of the tests.

The book's first four designs promise nothing (they are there to show what goes wrong). The last
design and the agent's loop promise no duplicate, nothing lost and no wrong result in any scenario,
and no question to a person unless the tracker can neither honour a key nor be asked about one;
the agent's loop also asks each gated call's approval exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator

from crashlab.engine.sweep import ScenarioResult, Variant
from crashlab.job import Job

#: The variants that make promises, and whether each may ask the person "did it happen?".
PROMISING: dict[str, bool] = {"keys-markers": False, "agent-keyed": False, "agent-lookup": False,
                              "agent-keyless": True}


def broken(variant: Variant, job: Job, result: ScenarioResult) -> Iterator[str]:
    """Each promise the scenario broke, in words; nothing for a variant that makes none."""
    if variant.slug not in PROMISING:
        return
    o = result.outcome
    if o.dups:
        yield "duplicated " + ", ".join(f"{call} ×{n + 1}" for call, n in o.dups.items())
    if o.missing:
        yield "lost " + ", ".join(o.missing)
    if o.wrong:
        yield "saved a wrong result for " + ", ".join(o.wrong)
    if o.asks and not PROMISING[variant.slug]:
        yield f"asked the person {o.asks} time(s)"
    gated = sum(c.needs_approval for c in job.calls)
    if variant.slug.startswith("agent-") and o.approvals != gated:
        yield f"asked {o.approvals} approval(s) for {gated} gated call(s)"
