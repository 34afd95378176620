"""A service of yours in crashlab's place: what a sweep needs of it, as a Jepsen test needs a client and a checker.

Your loop's tools call your own service or database. crashlab cannot break what it does not run
(so no fault, and no crash point inside it: only your loop's own), but it can sweep your loop
against it if the service lets the harness do three things: tell each process where it is
(`env`), empty it before each scenario (`reset`), and say what it holds afterwards (`records`),
as issues and comments the effects are recognised in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class YourService(Protocol):
    def env(self) -> Mapping[str, str]:
        """The environment each process of your loop gets: where your service is."""

    def reset(self) -> None:
        """Empty the service: every scenario starts from nothing, as a real deployment's test does."""

    def records(self) -> list[dict[str, Any]]:
        """What the service holds now, in the order it made them: ``{"kind": "issue", "number", "title",
        "body"}`` or ``{"kind": "comment", "number", "issue", "body"}``."""


def state_of(service: YourService) -> dict[str, Any]:
    """The service's records as crashlab's service states them: nobody was asked, no model was counted."""
    records = []
    for k, record in enumerate(service.records()):
        if not isinstance(record, Mapping) or record.get("kind") not in ("issue", "comment"):
            raise TypeError(f"{type(service).__name__}.records()[{k}] is not an issue or a comment: {record!r}")
        records.append({"kind": record["kind"], "number": int(record["number"]), "issue": record.get("issue"),
                        "title": record.get("title"), "body": str(record.get("body", "")),
                        "key": record.get("key")})
    return {"records": records, "asks": 0, "approvals": 0, "model_calls": 0}
