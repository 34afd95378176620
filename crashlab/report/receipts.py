"""Receipts: every failure window of a sweep as data another tool can read, one JSON line each.

A receipt is what a bug report about a crash needs and a terminal table cannot give: the action
(the effects a death harmed), where each process died in each of the window's scenarios, the
requests the first of them sent with their idempotency keys and what the service answered, the
count of each effect the tracker ended with, and the command that replays it. The sweep keeps only
each scenario's outcome, so the requests and what each death left come from running the window's
first scenario again, as `crashlab explain` does: one scenario a window, not one a scenario.

The types below are the receipt's JSON Schema too (`crashlab schema --receipt`), derived by msgspec,
so what is written and what the schema says cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from msgspec import Struct

from crashlab.job import Job
from crashlab.protocols.outcome import Outcome
from crashlab.protocols.variant import Variant
from crashlab.report import story as stories
from crashlab.report.windows import Window, describe

#: The receipt's format: raised when a field changes meaning or goes, so a reader can refuse what it cannot read.
VERSION = 1

#: The kinds of harm a window shows, in the order a report colours them (the first that applies wins).
KINDS = ("flaky", "duplicate", "missing", "wrong", "stuck", "stray", "asked")


class Scenario(Struct, forbid_unknown_fields=True):
    """One scenario of the window: its ID, and where each process that died did (index and label#occurrence)."""

    id: str
    crashes: list[int]
    points: list[str]


class Death(Struct, forbid_unknown_fields=True):
    """One death of the first scenario, and what it left the next process (its checkpoint, or its files)."""

    process: int
    point: str
    where: str
    left: str


class Request(Struct, forbid_unknown_fields=True):
    """A changing request the first scenario sent: its tool, the call it served, its key (None: sent without
    one), whether the service applied it or answered from the key, and the record it answered with."""

    process: int
    tool: str
    call: str
    key: str | None
    applied: bool
    answer: int | None


class Receipt(Struct, forbid_unknown_fields=True):
    """One failure window: what went wrong, where the processes died, what was sent, what the tracker holds."""

    version: int
    variant: str
    faults: str  # the faults as the scenario IDs name them ("" for crashes alone)
    kinds: list[str]  # of KINDS, the worst first
    harm: str  # "A made twice, C lost"
    summary: str  # the window's line, as `crashlab sweep` prints it
    effects: list[str]  # the effects the harm touches
    counts: dict[str, int]  # the records of each intended effect the tracker ended with (1 is right)
    asks: int
    scenarios: list[Scenario]
    deaths: list[Death]
    requests: list[Request]
    replay: str  # the command that replays the first scenario and tells its story


def kinds(outcome: Outcome) -> list[str]:
    """The kinds of harm an outcome shows, the worst first: how a report colours and filters it."""
    shown = {"flaky": outcome.flaky, "duplicate": outcome.dups, "missing": outcome.missing, "wrong": outcome.wrong,
             "stuck": outcome.stuck, "stray": outcome.orphans, "asked": outcome.asks}
    return [kind for kind in KINDS if shown[kind]]


def counts(outcome: Outcome, expected: list[str]) -> dict[str, int]:
    """The records each intended effect came to: 0 lost, 1 right, 2 and more duplicated."""
    return {effect: 0 if effect in outcome.missing else 1 + outcome.dups.get(effect, 0) for effect in expected}


class Receipts:
    """The receipts of one sweep: its job and variants (to run a window's first scenario again), and the command
    that replays a scenario of it, as often as the sweep ran each."""

    def __init__(self, job: Job, variants: Mapping[str, Variant], replay: Callable[[str], str], repeat: int = 1):
        self.job, self.variants, self.replay, self.repeat = job, variants, replay, repeat

    def of(self, window: Window) -> Receipt:
        first = window.members[0]
        runs, calls = stories.find_repeats(first.id, self.job, self.variants, self.repeat)
        told = stories.story(runs[0], calls, runs)
        o = first.outcome
        head = first.id.split(":", 1)[0]
        return Receipt(
            version=VERSION,
            variant=first.variant,
            faults=head[len(first.variant):].lstrip("+"),
            kinds=kinds(o),
            harm=window.failure,
            summary=describe(window, self.replay),
            effects=list(dict.fromkeys([*o.dups, *o.missing, *o.wrong])),
            counts=counts(o, told["verdict"]["expected"]),
            asks=o.asks,
            scenarios=[Scenario(s.id, list(s.crashes), list(s.points)) for s in window.members],
            deaths=[Death(c["process"], point, c["where"], left_by(told, c["process"]))
                    for c, point in zip(told["crashes"], first.points, strict=True)],
            requests=[Request(e.process, e.label, e.detail["call"], e.detail["key"] or None,
                              bool(e.detail["applied"]), e.detail["answer"])
                      for e in runs[0].points.events if e.kind == "request" and e.label != "search"],
            replay=self.replay(first.id),
        )


def left_by(told: dict[str, Any], process: int) -> str:
    """What the death of `process` left the next one, as the story tells what that one found."""
    after = told["processes"][process] if process < len(told["processes"]) else None
    return str(after["found"]) if after is not None else ""


def encode(receipt: Receipt) -> bytes:
    return msgspec.json.encode(receipt)


def receipt_schema() -> dict[str, Any]:
    """The JSON Schema of a line of receipts.jsonl."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "crashlab receipt",
            **msgspec.json.schema(Receipt)}
