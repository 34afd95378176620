"""`truelayer`: TrueLayer's Payments API v3, with a 30-day key.

Read 2026-12-07 at https://docs.truelayer.com/docs/idempotency-for-payment-requests. The key is
required on most Payments v3 requests and valid for 30 days from its creation; reusing it with
another body while it is valid is an error (the draft's 422). A retry after a failure and a
concurrent retry are not stated: the service's own ``replay-effect`` and the draft's 409.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="truelayer",
    provider="TrueLayer Payments v3",
    source="https://docs.truelayer.com/docs/idempotency-for-payment-requests",
    read="2026-12-07",
    lesson="keys last 30 days, so a keyed restart is a replay even after a long outage; an unkeyed request is "
           "refused.",
    retention=720.0,
    key_required=True,
)
