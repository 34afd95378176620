"""`checkout`: Checkout.com's payments API, which keeps only successes under a key.

Read 2026-12-07 at https://www.checkout.com/docs/payments/manage-payments/idempotency. The key
(``Cko-Idempotency-Key``) is kept 24 h by default; only a 2xx answer is kept, and after a 4xx or 5xx
the request "is attempted again" (``run-again``): a request that made its effect and then failed is
made twice by its keyed retry. Another payload and a concurrent retry are not stated: the draft's
422 and 409.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="checkout",
    provider="Checkout.com",
    source="https://www.checkout.com/docs/payments/manage-payments/idempotency",
    read="2026-12-07",
    lesson="only a 2xx is kept: a request that made its effect and then answered 5xx is made again by its keyed "
           "retry.",
    header="Cko-Idempotency-Key",
    after_failure="run-again",
)
