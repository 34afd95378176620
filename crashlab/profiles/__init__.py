"""The idempotency contracts real APIs offer, one module each: what a receiver promises about a key.

crashlab's tracker and service honoured one contract, the IETF draft's with Stripe's 24-hour
retention. Real APIs differ in four ways that decide whether a keyed agent duplicates: how long a
key is kept, what a retry after a failed request (5xx) gets, what the same key with another payload
gets, and whether a key is required. A `Profile` states those answers as data, with the page it
was read from and the date; the tracker, the service and `crashlab conform` read them.

A cell the provider's page does not state takes the draft's SHOULD, and the profile's module says
which cells those are. Profiles are found through the entry-point group ``crashlab.profiles``, as
faults are, so a provider's contract can live in any installed package::

    [project.entry-points."crashlab.profiles"]
    my-api = "my_package.profiles:PROFILE"
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from crashlab.errors import BadInput

ENTRY_POINTS = "crashlab.profiles"
#: The profile every table was made under before profiles existed, and still is by default.
DEFAULT = "ietf"

#: What a retry under the key of a request that failed (5xx) after making its effect gets:
#: ``replay-failure``: the failure was kept under the key, and the retry gets it again (no second effect);
#: ``run-again``: only a success is kept, so the retry is a fresh request and makes the effect again;
#: ``replay-effect``: the work is finished and its success kept, and the retry gets that success.
AfterFailure = Literal["replay-failure", "run-again", "replay-effect"]
#: What the same key with another payload gets: ``refused`` (an error, the draft's 422), or ``replayed``
#: (the first request's answer, as if the payload were the same: the second call's effect is never made).
OtherPayload = Literal["refused", "replayed"]
#: What the replay header says: ``true`` (ACP's and Stripe's ``Idempotent-Replayed: true``), or ``first-time``:
#: when the first request was kept, in milliseconds since the epoch (Worldline's request timestamp).
ReplayedValue = Literal["true", "first-time"]


@dataclass(frozen=True)
class Profile:
    """One provider's idempotency contract, as its own documentation states it."""

    slug: str
    provider: str
    #: The page the contract was read from, and the date it was read.
    source: str
    read: str
    #: What a keyed agent learns from this contract, in a sentence (the README's table shows it).
    lesson: str
    #: The header the provider names its key with (the service takes it, and `Idempotency-Key` too, under every
    #: profile; `crashlab conform` sends its keys under it).
    header: str = "Idempotency-Key"
    #: Whether a key is honoured at all: under ``none`` every request is applied, keyed or not.
    honours_keys: bool = True
    #: Hours a key is honoured after its request was applied; None: for ever.
    retention: float | None = 24.0
    after_failure: AfterFailure = "replay-effect"
    other_payload: OtherPayload = "refused"
    other_payload_status: int = 422
    #: The status of a retry that arrives while the first request under its key is still being processed.
    in_flight_status: int = 409
    #: Whether that answer says when to retry (ACP's ``Retry-After``).
    retry_after: bool = False
    #: Whether a changing request without a key is refused (400).
    key_required: bool = False
    #: The longest key the provider takes, in characters.
    max_key: int = 255
    #: The header that marks a replayed answer, if the provider sends one.
    replayed_header: str | None = "Idempotent-Replayed"
    replayed_value: ReplayedValue = "true"
    #: Error codes the provider names in its answers' bodies, by the case: ``other-payload``, ``in-flight``,
    #: ``no-key``. A case it names no code for answers a plain one-line error.
    codes: tuple[tuple[str, str], ...] = ()

    def code(self, case: str) -> str | None:
        return dict(self.codes).get(case)

    def holds(self, age: float) -> bool:
        """Whether a key applied `age` hours ago is still honoured."""
        return self.honours_keys and (self.retention is None or age < self.retention)


@cache
def registry() -> dict[str, Profile]:
    """Every profile installed, by slug, the default first and the rest in the order of their slugs."""
    from importlib.metadata import entry_points

    found: dict[str, Profile] = {}
    for entry in entry_points(group=ENTRY_POINTS):
        profile = entry.load()
        if not isinstance(profile, Profile) or profile.slug != entry.name:
            raise BadInput(f"the entry point {entry.name} = {entry.value} of group {ENTRY_POINTS} is not a "
                           f"crashlab.profiles.Profile whose slug is {entry.name!r}")
        found[entry.name] = profile
    return {slug: found[slug] for slug in sorted(found, key=lambda slug: (slug != DEFAULT, slug))}


def find(slug: str) -> Profile:
    profiles = registry()
    if slug not in profiles:
        raise BadInput(f"unknown profile {slug!r} (valid: {', '.join(profiles)}; `crashlab profiles` says what each "
                       "promises)")
    return profiles[slug]
