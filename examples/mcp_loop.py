"""The triage loop of http_loop.py with MCP tools: the official MCP client, the key a tool argument.

Its tools are the service's MCP tools (``create_issue``, ``comment``), reached at
``CRASHLAB_MCP_URL`` over streamable HTTP. MCP has no request header a tool can see, so ``keyed``
sends its run ID and step as the ``idempotency_key`` argument, which the service honours exactly
as it honours the HTTP header. It imports its sibling, ``http_loop``, for the steps and the saving:
a swept file's folder is importable. Sweep it as the HTTP loop is swept::

    crashlab sweep --loop examples/mcp_loop.py:keyed --effects examples/http_loop.yaml
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import mcp
from http_loop import STEPS, begin, point, save


async def call(client: mcp.Client, tool: str, arguments: dict[str, Any]) -> int:
    """Call a tool; the record's number, or the service's refusal raised."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(result.content[0].text)
    return result.structured_content["number"]


async def triage(keyed: bool) -> None:
    saved, progress = begin()
    done = progress["done"]
    async with mcp.Client(os.environ.get("CRASHLAB_MCP_URL", "http://127.0.0.1:8000/mcp")) as client:
        for step, kind, text in STEPS:
            if step in done:
                continue
            arguments: dict[str, Any] = {"title": text} if kind == "issue" else {"issue": done["A"], "body": text}
            if keyed:
                arguments["idempotency_key"] = f"{progress['run']}:{step}"
            done[step] = await call(client, "create_issue" if kind == "issue" else "comment", arguments)
            point("answered")
            save(saved, progress)
            point("saved")


def plain() -> None:
    asyncio.run(triage(keyed=False))


def keyed() -> None:
    asyncio.run(triage(keyed=True))
