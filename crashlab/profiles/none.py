"""`none`: a receiver that honours no key, as most internal APIs and many SaaS APIs are.

No source: the absence of a contract. A key is accepted and ignored; every request is applied.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="none",
    provider="no idempotency (the key is ignored)",
    source="",
    read="2026-12-07",
    lesson="a key changes nothing: only an attempt marker and a question to the receiver or a person keep a "
           "restart from repeating.",
    honours_keys=False,
    retention=0.0,
    after_failure="run-again",
    replayed_header=None,
)
