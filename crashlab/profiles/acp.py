"""`acp`: the Agentic Commerce Protocol's checkout, where a key is mandatory (since 2026-02).

Read 2026-12-07 at https://github.com/agentic-commerce-protocol/agentic-commerce-protocol/blob/main/rfcs/rfc.agentic_checkout.md
(version 2026-01-16, section 6). Every POST needs an ``Idempotency-Key`` (at most 255 characters),
else 400 ``idempotency_key_required``; keys are kept at least 24 h. Another payload is 422
``idempotency_conflict``; a retry while the first is in flight is 409 ``idempotency_in_flight`` with
``Retry-After``. "Responses with HTTP 5xx status codes MUST NOT be cached against the idempotency
key": a retry after a 5xx is processed afresh (``run-again``). A replay SHOULD carry
``Idempotent-Replayed: true``.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="acp",
    provider="Agentic Commerce Protocol",
    source="https://github.com/agentic-commerce-protocol/agentic-commerce-protocol/blob/main/rfcs/rfc.agentic_checkout.md",
    read="2026-12-07",
    lesson="a 5xx is never kept: a request that made its effect and then failed is made again by its keyed retry; "
           "an unkeyed request is refused.",
    after_failure="run-again",
    retry_after=True,
    key_required=True,
    codes=(("other-payload", "idempotency_conflict"), ("in-flight", "idempotency_in_flight"),
           ("no-key", "idempotency_key_required")),
)
