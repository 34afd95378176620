"""The job's tools as a framework's user writes them against a real service: plain HTTP, no crashlab.

Each call is a JSON request to the service at ``CRASHLAB_TRACKER_URL`` (read when the call is made,
as a forked process gets it), with an ``Idempotency-Key`` header when the tool is keyed. An error
answer raises, as a tool's HTTP client would.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

#: No proxy: the service is on this machine.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServiceError(Exception):
    """An error answer, as plain values: a framework that records a step's exception (DBOS pickles it)
    can keep it, which it cannot do with urllib's `HTTPError` and its open response."""


def _send(method: str, path: str, payload: dict[str, Any] | None = None, key: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key is not None else {})}
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + path, data, headers, method=method)
    try:
        with _DIRECT.open(request, timeout=60) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        raise ServiceError(f"{method} {path}: {error.code} {error.read().decode(errors='replace')}") from None


def create_issue(title: str, body: str, key: str | None = None) -> int:
    return int(_send("POST", "/issues", {"title": title, "body": body}, key)["number"])


def comment(issue: int, body: str, key: str | None = None) -> int:
    return int(_send("POST", f"/issues/{int(issue)}/comments", {"body": body}, key)["number"])


def search(query: str) -> list[int]:
    return [found["number"] for found in _send("GET", "/search?" + urllib.parse.urlencode({"q": query}))["issues"]]
