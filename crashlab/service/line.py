"""The service's end of the control line: report an event, wait for the harness's word, go on.

One frame is outstanding at a time, so the harness sees the service's events in one order and
answers them in that order. A request whose handler is cancelled while it waits (its client went
away) does not cut the exchange short: the exchange runs as a task of its own and keeps the line
until the reply comes, or the next report would read the previous one's reply.

The line closing, or carrying anything but a reply to the frame outstanding, means the harness is
gone or broken: the service is told (`on_close`) and stops, and every report raises `LineBroken`.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from crashlab.service.control import GO, GONE, HEADER, HOLD, LineBroken, decode, encode, length


class Line:
    """The control line on file descriptor `fd`; `open` it inside the event loop that will use it."""

    def __init__(self, fd: int, on_close: Callable[[str, bool], None]):
        self.fd = fd
        self.on_close = on_close  # (why, whether it broke rather than closed)
        self.lock = asyncio.Lock()
        self.broken: str | None = None
        self._waiting: asyncio.Future[dict[str, Any]] | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._listening: asyncio.Task[None] | None = None

    async def open(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(sock=socket.socket(fileno=self.fd))
        self._listening = asyncio.create_task(self._listen())

    async def close(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
        if self._writer is not None:
            self._writer.close()

    async def report(self, kind: str, label: str, detail: dict[str, Any], point: str | None = None) -> dict[str, Any]:
        """Send the event and wait for the harness's word (`GO`; `HOLD` at ``sent``, `GONE` at another crash point
        where the loop died); `LineBroken` if the line is gone."""
        message: dict[str, Any] = {"kind": kind, "label": label, "detail": detail}
        if point is not None:
            message["point"] = point
        exchange = asyncio.ensure_future(self._exchange(message))
        exchange.add_done_callback(_settled)
        return await asyncio.shield(exchange)

    async def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        async with self.lock:
            if self.broken is not None or self._writer is None:
                raise LineBroken(self.broken or "the line was never opened")
            self._waiting = asyncio.get_running_loop().create_future()
            try:
                self._writer.write(encode(message))
                await self._writer.drain()
                reply = await self._waiting
            except (ConnectionError, OSError) as error:
                self._break(f"the line failed ({error})", broke=False)
                raise LineBroken(self.broken) from None
            finally:
                self._waiting = None
            point = message.get("point") or (message["label"] if message["kind"] == "point" else None)
            if reply != GO and not (reply == HOLD and point == "sent") and not (reply == GONE and point):
                self._break(f"a reply that is not {GO}: {reply}", broke=True)
                raise LineBroken(self.broken)
            return reply

    async def _listen(self) -> None:
        assert self._reader is not None
        while self.broken is None:
            try:
                frame = await receive(self._reader)
            except LineBroken as error:
                self._break(str(error), broke=str(error) != "the line closed")
                return
            except (ConnectionError, OSError) as error:
                self._break(f"the line failed ({error})", broke=False)
                return
            if self._waiting is None or self._waiting.done():
                self._break(f"a frame when none was asked for: {frame}", broke=True)
                return
            self._waiting.set_result(frame)

    def _break(self, why: str, broke: bool) -> None:
        if self.broken is not None:
            return
        self.broken = why
        if self._waiting is not None and not self._waiting.done():
            self._waiting.set_exception(LineBroken(why))
        self.on_close(why, broke)


def _settled(exchange: asyncio.Future[dict[str, Any]]) -> None:
    """Collect the outcome of an exchange whose reporter was cancelled: the line's end is told elsewhere."""
    if not exchange.cancelled():
        exchange.exception()


async def receive(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The harness's next frame, read on the service's event loop; `LineBroken` if the line closed."""
    try:
        header = await reader.readexactly(HEADER.size)
        return decode(await reader.readexactly(length(header)))
    except asyncio.IncompleteReadError:
        raise LineBroken("the line closed") from None
