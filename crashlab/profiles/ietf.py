"""`ietf`: draft-ietf-httpapi-idempotency-key-header-07, the contract crashlab's service kept before profiles.

Read 2026-12-07 at https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-idempotency-key-header
(15 October 2025, expired 18 April 2026). The draft leaves the retention to the server ("MAY expire",
"SHOULD publish"): crashlab publishes Stripe's 24 h. It says nothing of a retry after a failure: the
service commits a record and its key in one transaction, so a request that failed after its effect
answers a retry with that effect (``replay-effect``).
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="ietf",
    provider="IETF draft (crashlab's default)",
    source="https://datatracker.ietf.org/doc/html/draft-ietf-httpapi-idempotency-key-header",
    read="2026-12-07",
    lesson="a key derived from run ID and call ID makes every retry within 24 h a replay; after that, a repeat.",
)
