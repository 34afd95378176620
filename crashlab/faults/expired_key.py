"""`expired-key`: a restart comes after a downtime, and a keyed tracker forgets a key 24 h after it applied it.

The world has a clock, and a keyed tracker honours a key for `crashlab.world.KEY_RETENTION` hours
(Stripe's 24), then applies a repeat again; its records keep their keys, so a lookup still finds
them. A process takes no time; each death is followed by each of the `DOWNTIMES`, a scenario each:
``keys-markers+expired-key:12~2`` restarts two days after a crash at point 12. A rerun after the
key expired duplicates, unless the loop sees that its marker is older than the key retention its
tool declares and goes down the ladder.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from crashlab.protocols.death import Death, Left
from crashlab.protocols.fault import Fault, Serving

#: The downtimes before a restart, in hours: ~1 an hour, well within the 24 a keyed tracker keeps a
#: key; ~2 two days, past it.
DOWNTIMES = (1.0, 48.0)


class ExpiredKey(Fault):
    slug = "expired-key"
    breaks = ("a restart comes after a downtime, and a keyed tracker forgets a key 24 h after it applied it: a keyed "
              "repeat after that is applied again")
    adds = ("for each crash point, one scenario per downtime before the restart (ID SLUG+expired-key:I~S, ~1 1 h, "
            "~2 48 h)")
    chooses = True

    def left(self, left: Left, death: Death) -> Iterable[Left]:
        world = left.durable.world
        for s, hours in enumerate(DOWNTIMES, start=1):
            now = world.hours + hours
            yield left.then(f"it starts {hours:g} h after the death: the world's clock reads {now:g} h", s,
                            replace(left.durable, world=replace(world, hours=now)))

    def serve(self, serving: Serving) -> Serving:
        """Between each death and its restart, the service's own clock moves on by each downtime in turn."""
        return replace(serving, downtimes=DOWNTIMES)
