"""Every loop crashlab can name, in one registry: the five designs, the agent's own loop, the runtimes'.

Each is a `Variant`: its entry point and every attribute the rest of crashlab asks of it. A loop on
a framework is imported only when a process runs it, so the registry costs nothing to load and a
missing extra is named, not raised from deep inside an import.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from crashlab.errors import BadInput
from crashlab.loops.agent import Agent
from crashlab.loops.designs import BEYOND_THE_BOOK, DESIGNS, Design
from crashlab.protocols.run import Run
from crashlab.protocols.variant import Promises, Variant
from crashlab.runtimes import Runtime, runtimes
from crashlab.world import TRACKER_MODES


@dataclass(frozen=True)
class Adapter:
    """A runtime's loop, run as `crashlab.runtimes.<runtime>.loop.entry(slug, run)`: imported when first run."""

    runtime: str
    slug: str

    def load(self) -> None:
        """Import the runtime now, in the warm parent, so no forked process pays for it; and let it warm what it
        would otherwise make anew in each (its `warm`, if it has one: DBOS's compiled statements)."""
        try:
            loop = import_module(f"crashlab.runtimes.{self.runtime}.loop")
        except ImportError as error:
            raise BadInput(f"{self.slug} needs its runtime ({error}): pip install 'crashlab[{self.runtime}]'") \
                from None
        getattr(loop, "warm", lambda: None)()

    def __call__(self, run: Run) -> None:
        import_module(f"crashlab.runtimes.{self.runtime}.loop").entry(self.slug, run)


def _design(design: Design) -> Variant:
    return Variant(design.slug, design.name, "designs", design.entry, table="book",
                   promises=Promises() if design.promises else None, refuses=design.refuses,
                   in_all=design.slug in DESIGNS)


def _agent(agent: Agent) -> Variant:
    return Variant(agent.slug, agent.name, "agent", agent.entry, tracker=agent.tracker, desk=agent.desk,
                   promises=Promises(may_ask=agent.tracker == "keyless", approvals_once=True))


def _runtime(runtime: Runtime, slug: str, name: str) -> Variant:
    return Variant(slug, name, runtime.name, Adapter(runtime.name, slug), table="loop", runners=frozenset({"forked"}),
                   keeps_checkpoint=False, extra=f"crashlab[{runtime.name}]", serves_job=True,
                   scheduled=slug in runtime.scheduled, kept_in_directory=runtime.kept_in_directory,
                   volatile=runtime.volatile, minted=runtime.minted)


#: Every variant a scenario ID can name, by slug.
VARIANTS: dict[str, Variant] = {
    **{slug: _design(d) for slug, d in {**DESIGNS, **BEYOND_THE_BOOK}.items()},
    **{v.slug: v for v in (_agent(Agent(mode)) for mode in TRACKER_MODES)},
    **{slug: _runtime(runtime, slug, name) for runtime in runtimes().values()
       for slug, name in runtime.rows.items()},
}

#: The loops, by family: whose variants `--loop NAME --variant all` means.
FAMILIES: dict[str, dict[str, Variant]] = {}
for _variant in VARIANTS.values():
    FAMILIES.setdefault(_variant.family, {})[_variant.slug] = _variant
