"""The control line between the service and the harness that sweeps a loop against it.

The service reports every event a sweep must see (a request it committed, a lookup it answered, a
question it put to the person) and waits for the harness's word before it answers the loop. That
wait is where a death happens: at the service's crash point ``accepted``, right after it commits,
the harness kills the loop's process, then lets the service go on, and its answer goes nowhere. So
the harness sees every event of the loop and of the service in one order, and decides every death.

A frame is a 4-byte big-endian length and that many bytes of JSON, one object each way:

service → harness   ``{"kind": "request", "label": TOOL, "detail": {...}, "point": "accepted"}``,
                    ``{"kind": "lookup", ...}`` (no ``point``); it then waits for the reply.
                    ``{"kind": "point", "label": "sent", ...}`` as a changing request arrives,
                    under late delivery only.
harness → service   ``{"go": true}``: answer the loop (if the loop is still alive to hear it);
                    ``{"hold": true}``, at ``sent`` only: the loop died with the request on the
                    wire, so hold it until the harness lands it (``POST /_crashlab/land``);
                    ``{"gone": true}``, at any other crash point: the loop died there, so the
                    request goes on to nobody and passes no later point.
"""

from __future__ import annotations

import json
import math
import select
import socket
import struct
import time
from typing import Any

HEADER = struct.Struct("!I")
#: The harness's word: answer the loop.
GO = {"go": True}
#: Its other word, at ``sent`` only: hold the request, whose client died with it on the wire.
HOLD = {"hold": True}
#: Its word at any other crash point where it killed the loop: the client is gone, so the service answers
#: nobody and passes no more points for the request (the model's ``model-asked`` stops there).
GONE = {"gone": True}
#: No frame on this line is larger: a longer length is a broken line, not a frame to allocate for.
MAX_FRAME = 1 << 20


class LineBroken(ConnectionError):
    """The other end closed the line, or sent what is not a frame."""


def encode(message: dict[str, Any]) -> bytes:
    data = json.dumps(message, separators=(",", ":")).encode()
    return HEADER.pack(len(data)) + data


def decode(data: bytes) -> dict[str, Any]:
    try:
        message = json.loads(data)
    except ValueError as error:
        raise LineBroken(f"a frame that is not JSON ({error})") from None
    if not isinstance(message, dict):
        raise LineBroken("a frame that is not a JSON object")
    return message


def length(header: bytes) -> int:
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME:
        raise LineBroken(f"a frame of {length} bytes, more than {MAX_FRAME}")
    return length


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(encode(message))


def receive(sock: socket.socket, until: float = math.inf) -> dict[str, Any]:
    """The next frame; `LineBroken` if the line closed before a whole one came. The harness, which must never wait
    for ever on a process it watches, gives `until` (`time.monotonic()`): `TimeoutError` if no whole frame came by
    then. The other end waits for the harness's word as long as it takes, and gives none."""
    return decode(_exactly(sock, length(_exactly(sock, HEADER.size, until)), until))


def _exactly(sock: socket.socket, n: int, until: float) -> bytes:
    chunks, left = [], n
    while left:
        wait = until - time.monotonic()
        if wait < math.inf and not select.select([sock], [], [], max(wait, 0))[0]:
            raise TimeoutError(f"no whole frame on the line in time ({n - left} of {n} bytes came)")
        chunk = sock.recv(left)
        if not chunk:
            raise LineBroken("the line closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
