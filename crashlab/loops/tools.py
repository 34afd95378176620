"""The tools a loop calls: what each does to the world, and what each declares for the ladder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crashlab.job import Call
from crashlab.world import KEY_RETENTION, Refused, TrackerMode, TransportError, World


@dataclass(frozen=True)
class ToolSpec:
    """What the resolution ladder needs to know about a tool, declared by the tool itself.

    read_only and idempotent make a repeat harmless by nature; honours_keys makes a keyed repeat
    harmless for as long as the receiver holds the key, `key_retention` hours (None: for ever);
    supports_lookup means the receiver can say whether a keyed request happened, and
    fences_lookups that a lookup finding nothing also fences the key, so a late arrival under it
    is refused and a resend needs a new key.
    """

    name: str
    read_only: bool = False
    idempotent: bool = False
    honours_keys: bool = False
    supports_lookup: bool = False
    key_retention: float | None = None
    fences_lookups: bool = False


def toolbox(tracker_mode: TrackerMode) -> dict[str, ToolSpec]:
    """The tools as declared for a tracker in `tracker_mode`: a tool promises what its receiver does.

    A keyed tool declares the default contract's retention (`KEY_RETENTION`, Stripe's 24 h), whatever
    profile the tracker keeps: crashlab's loops are written against one documented contract, as a
    real agent is, and a sweep under another profile (``--profile qonto``) shows what that costs."""
    def changing(name: str) -> ToolSpec:
        return ToolSpec(name, honours_keys=tracker_mode == "keyed",
                        supports_lookup=tracker_mode in ("keyed", "lookup", "fencing"),
                        key_retention=KEY_RETENTION if tracker_mode == "keyed" else None,
                        fences_lookups=tracker_mode == "fencing")

    return {"search": ToolSpec("search", read_only=True), "create_issue": changing("create_issue"),
            "comment": changing("comment")}


def resolve(call: Call, results: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments with ``"$A"`` replaced by the issue that call A created."""
    ref = call.ref
    if ref is None:
        return call.args
    return {**call.args, "issue": results[ref]}


def invoke(world: World, call: Call, results: dict[str, Any], key: str | None = None) -> Any:
    """Make the call against the tracker and return its result (an issue or comment number, or hits, or why it
    made nothing: a comment on an issue the tracker does not hold is refused, as is a request the tracker's
    profile refuses (no key where one is required, a key too long, a key's other payload), and the refusal
    is its result).

    A changing request goes over the world's wire, which may fail it (`crashlab.world.UnknownOutcome`).
    A call marked ``fails_after_accept`` models an MCP server that dies mid-call, once: the tracker
    handles the request, then the caller gets a `TransportError` instead of the answer.
    """
    args = resolve(call, results)
    try:
        result = world.wire.send(call, args, key) if call.changes else world.tracker.search(call, args["query"])
    except Refused as refusal:
        return f"not made: the tracker refused it, {refusal}"
    if call.fails_after_accept and call.id not in world.servers_died:
        world.servers_died.add(call.id)
        world.tracker.points.note("transport-error", call.tool, call=call.id)
        raise TransportError(f"the {call.tool} server died after handling call {call.id}")
    return result
