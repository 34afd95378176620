"""The tools a loop calls, and what each one does to the world."""

from __future__ import annotations

from typing import Any

from .job import Call
from .world import World


def resolve(call: Call, results: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments with ``"$A"`` replaced by the issue that call A created."""
    ref = call.ref
    if ref is None:
        return call.args
    return {**call.args, "issue": results[ref]}


def invoke(world: World, call: Call, results: dict[str, Any], key: str | None = None) -> Any:
    """Make the call against the tracker and return its result (an issue or comment number, or hits)."""
    args = resolve(call, results)
    if call.changes:
        return world.tracker.request(call, args, key)
    return world.tracker.search(call, args["query"])
