"""`qonto`: Qonto's API, with a 30-minute key and the first answer for any payload.

Read 2026-12-07 at https://docs.qonto.com/get-started/general/idempotent-requests. The key
(``X-Qonto-Idempotency-Key``) is mandatory on the endpoints it lists and kept 30 minutes, after which
the same request creates a new resource; only a successful answer is cached (``run-again``), and the
cached answer is returned "even for another body" (``replayed``). A concurrent retry is not stated:
the draft's 409.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="qonto",
    provider="Qonto",
    source="https://docs.qonto.com/get-started/general/idempotent-requests",
    read="2026-12-07",
    lesson="a restart more than 30 minutes after the first attempt makes the effect again, and a key shared by "
           "two calls silently drops the second.",
    header="X-Qonto-Idempotency-Key",
    retention=0.5,
    after_failure="run-again",
    other_payload="replayed",
    other_payload_status=201,
    key_required=True,
    replayed_header=None,
)
