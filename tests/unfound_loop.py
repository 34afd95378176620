"""A loop of yours that comments, under a key, on an issue the service does not hold, and takes the 404 for a bug.

It imports nothing of crashlab's. Its uninterrupted run fails under every profile, and for no contract's reason:
the service refuses a comment on no issue whatever idempotency contract it keeps, so a sweep of it under several
profiles must fail with a harness error, as a sweep under one does.
"""

from __future__ import annotations

import json
import os
import urllib.request


def comment() -> None:
    url = os.environ["CRASHLAB_TRACKER_URL"] + "/issues/99/comments"
    headers = {"Content-Type": "application/json", "Idempotency-Key": "run-1:C"}
    request = urllib.request.Request(url, json.dumps({"body": "Same root cause"}).encode(), headers)
    urllib.request.urlopen(request, timeout=30)
