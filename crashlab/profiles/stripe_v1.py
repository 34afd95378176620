"""`stripe-v1`: Stripe's API v1, whose idempotency the draft was modelled on.

Read 2026-12-07 at https://docs.stripe.com/idempotency. Keys "can be removed from the system
automatically after they're at least 24 hours old", and a key reused after that is a new request.
The result of the first request is saved "regardless of whether it succeeds or fails", 500 errors
included, once the endpoint began executing: a retry gets the same failure (``replay-failure``).
Parameters are compared, and a reuse with others "errors"; a retry while the first runs is refused
with ``idempotency_key_in_use`` (409) and nothing is saved for it. Keys are at most 255 characters.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="stripe-v1",
    provider="Stripe API v1",
    source="https://docs.stripe.com/idempotency",
    read="2026-12-07",
    lesson="a 500 is replayed too: a keyed retry after a failure never makes the effect twice, but never "
           "learns that it was made.",
    after_failure="replay-failure",
    other_payload_status=400,
    codes=(("other-payload", "idempotency_error"), ("in-flight", "idempotency_key_in_use")),
)
