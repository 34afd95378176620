"""The chapter's idempotency key: one per tool call, the same on every retry of it."""

from __future__ import annotations

import hashlib


def key(run: str, call: str, generation: int = 1) -> str:
    """The key for `call` of `run`, and for its `generation`-th key if a fencing lookup retired the first.

    Each part is length-prefixed ("<bytes>:<utf-8>") before hashing, so no two (run, call) pairs can
    run together into the same input: ``key("a:b", "c") != key("a", "b:c")``, nor a later generation's
    with a first's. Sixteen bytes of SHA-256 keep keys short while making a collision between calls
    practically impossible.
    """
    digest = hashlib.sha256()
    for part in (run, call) if generation == 1 else (run, call, str(generation)):
        data = part.encode("utf-8")
        digest.update(b"%d:" % len(data))
        digest.update(data)
    return digest.digest()[:16].hex()
