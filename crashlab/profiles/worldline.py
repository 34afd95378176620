"""`worldline`: Worldline's payment APIs (Direct and Connect), with a 40-character key.

Read 2026-12-07 at https://docs.direct.worldline-solutions.com/integration/api-developer-guide/idempotent-requests
and https://docs.connect.worldline-solutions.com/documentation/error-handling/idempotent-requests. The key
(``X-GCS-Idempotence-Key``, ASCII, at most 40 characters) is kept at least 24 h; a completed request's
outcome is returned "even with different payloads" (``replayed``); a retry while the first is being
processed gets 409; a replay carries ``X-GCS-Idempotence-Request-Timestamp``. A retry after a failure is
not stated: the service's own ``replay-effect``.
"""

from crashlab.profiles import Profile

PROFILE = Profile(
    slug="worldline",
    provider="Worldline",
    source="https://docs.direct.worldline-solutions.com/integration/api-developer-guide/idempotent-requests",
    read="2026-12-07",
    lesson="a key longer than 40 characters is refused, and a key shared by two calls silently answers the second "
           "with the first's result.",
    header="X-GCS-Idempotence-Key",
    other_payload="replayed",
    other_payload_status=201,
    max_key=40,
    replayed_header="X-GCS-Idempotence-Request-Timestamp",
    replayed_value="first-time",
)
