"""Where an MCP client puts the idempotency key of a tool call: three places, one key.

MCP has no request header a tool can see, so a key travels in the request. SEP-3182 (Request
Idempotency, a proposal for MCP, read 2026-12-07 at
https://github.com/modelcontextprotocol/modelcontextprotocol/pull/3182) adds an optional
``idempotencyKey`` to the params of ``tools/call``, negotiated by a ``tools.idempotency``
capability. The official Python SDK (mcp 2.3.0) knows neither: its server keeps the raw params a
client sent, so the field is read from there, and its client can add nothing to ``params`` but
``_meta``, so ``_meta.idempotencyKey`` is taken too (the form a demonstration before the SEP
used). crashlab's own form, from before either, is the tool argument ``idempotency_key``.

A call may carry the key in more than one place; they must agree, or the call is refused (400):
one call is one request, and two keys would make it two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crashlab.service.tracker import Refused

#: SEP-3182's field, in ``params`` (and, from a client that can only add metadata, in ``params._meta``).
SEP_FIELD = "idempotencyKey"
#: crashlab's tool argument, the key's form before the SEP.
ARGUMENT = "idempotency_key"


def key_sent(params: Mapping[str, Any] | None, argument: object = None) -> object:
    """The key a ``tools/call`` carries, in any of its three places (None: none); `Refused` (400) if two differ.

    It is returned as sent: the tracker checks that it is a key it keeps (printable ASCII, 1 to 255
    characters), whichever place it came from."""
    raw = params or {}
    meta = raw.get("_meta")
    places = (("params.idempotencyKey", raw.get(SEP_FIELD)),
              ("_meta.idempotencyKey", meta.get(SEP_FIELD) if isinstance(meta, Mapping) else None),
              (f"the argument {ARGUMENT}", argument))
    sent = [(where, key) for where, key in places if key is not None]
    for where, key in sent[1:]:
        if key != sent[0][1]:
            raise Refused(400, f"{sent[0][0]} and {where} name two idempotency keys: a call carries one")
    return sent[0][1] if sent else None
