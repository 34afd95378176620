"""`expired-key`: a restart comes after a downtime, and a keyed tracker forgets a key once its retention is past.

The world has a clock, and a keyed tracker honours a key for its profile's retention (the
default's `crashlab.world.KEY_RETENTION`, Stripe's 24 h), then applies a repeat again; its records
keep their keys, so a lookup still finds them. A process takes no time; each death is followed by
each of the `downtimes`, a scenario each: ``keys-markers+expired-key:12~2`` restarts two days after
a crash at point 12. A rerun after the key expired duplicates, unless the loop sees that its marker
is older than the key retention its tool declares and goes down the ladder.

The downtimes are an hour and two days (`DOWNTIMES`) under every profile whose keys expire within
two days; under one that keeps them longer (TrueLayer's 30 days), the second is twice its retention,
so that ``~2`` always restarts past it. Qonto's 30 minutes are past at the first: a keyed loop that
assumes 24 h duplicates there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from crashlab.profiles import Profile, find
from crashlab.protocols.death import Death, Left
from crashlab.protocols.fault import Fault, Serving

#: The downtimes before a restart, in hours: ~1 an hour, well within the 24 a keyed tracker keeps a
#: key by default; ~2 two days, past it.
DOWNTIMES = (1.0, 48.0)


def downtimes(profile: Profile) -> tuple[float, ...]:
    """The downtimes under `profile`: `DOWNTIMES`, the second past any retention of up to two days, else past the
    profile's."""
    short, long = DOWNTIMES
    return short, long if profile.retention is None or profile.retention < long else 2 * profile.retention


class ExpiredKey(Fault):
    slug = "expired-key"
    breaks = ("a restart comes after a downtime, and a keyed tracker forgets a key its profile's retention (24 h by "
              "default) after it applied it: a keyed repeat after that is applied again")
    adds = ("for each crash point, one scenario per downtime before the restart (ID SLUG+expired-key:I~S, ~1 1 h, "
            "~2 48 h or twice a longer retention)")
    chooses = True

    def left(self, left: Left, death: Death) -> Iterable[Left]:
        world = left.durable.world
        for s, hours in enumerate(downtimes(death.world.tracker.profile), start=1):
            now = world.hours + hours
            yield left.then(f"it starts {hours:g} h after the death: the world's clock reads {now:g} h", s,
                            replace(left.durable, world=replace(world, hours=now)))

    def serve(self, serving: Serving) -> Serving:
        """Between each death and its restart, the service's own clock moves on by each downtime in turn."""
        return replace(serving, downtimes=downtimes(find(serving.profile)))
