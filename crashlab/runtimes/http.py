"""The job's tools as a framework's user writes them against a real service: plain HTTP.

Each call is a JSON request to the service at ``CRASHLAB_TRACKER_URL`` (read when the call is made,
as a forked process gets it), with an ``Idempotency-Key`` header when the tool is keyed. An error
answer raises, as a tool's HTTP client would.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from typing import Any

from crashlab.world.remote import exchange


class ServiceError(Exception):
    """An error answer, as plain values: a framework that records a step's exception (DBOS pickles it)
    can keep it, which it cannot do with urllib's `HTTPError` and its open response."""


def _send(method: str, path: str, payload: dict[str, Any] | None = None, key: str | None = None) -> Any:
    answer = exchange(os.environ["CRASHLAB_TRACKER_URL"], method, path, payload, key)
    if answer.status >= 400:
        raise ServiceError(f"{method} {path}: {answer.status} {json.dumps(answer.body)}")
    return answer.body


def create_issue(title: str, body: str, key: str | None = None) -> int:
    return int(_send("POST", "/issues", {"title": title, "body": body}, key)["number"])


def comment(issue: int, body: str, key: str | None = None) -> int:
    return int(_send("POST", f"/issues/{int(issue)}/comments", {"body": body}, key)["number"])


def search(query: str) -> list[int]:
    return [found["number"] for found in _send("GET", "/search?" + urllib.parse.urlencode({"q": query}))["issues"]]


def approve(action: str) -> bool:
    """Ask the person to approve an action before it is taken; their decision."""
    return bool(_send("POST", "/person/approvals", {"action": action})["approved"])
