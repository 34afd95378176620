"""`stripe-v2`: Stripe's API v2 (the 2026-09-30 preview), which finishes failed work on a retry.

Read 2026-12-07 at https://docs.stripe.com/api/idempotent_requests?api-version=2026-09-30.preview.
A retry under the key of a request that failed or partly failed retries the work "to completion",
or answers an error that says why it cannot (``replay-effect``: the effect is made once and the
retry learns it). The page states no retention, no answer to another payload and none to a
concurrent retry: those cells take v1's 24 h and the draft's 422 and 409.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="stripe-v2",
    provider="Stripe API v2 (2026-09-30 preview)",
    source="https://docs.stripe.com/api/idempotent_requests?api-version=2026-09-30.preview",
    read="2026-12-07",
    lesson="a keyed retry after a failure finishes the work once and answers its success: the safest contract here.",
    after_failure="replay-effect",
)
