"""The chapter's idempotency key: one per tool call, the same on every retry of it."""

from __future__ import annotations

import hashlib


def key(run: str, call: str) -> str:
    """The key for `call` of `run`.

    Each part is length-prefixed ("<bytes>:<utf-8>") before hashing, so no two (run, call) pairs can
    run together into the same input: ``key("a:b", "c") != key("a", "b:c")``. Sixteen bytes of
    SHA-256 keep keys short while making a collision between calls practically impossible.
    """
    digest = hashlib.sha256()
    for part in (run, call):
        data = part.encode("utf-8")
        digest.update(b"%d:" % len(data))
        digest.update(data)
    return digest.digest()[:16].hex()
