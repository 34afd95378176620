"""The tracker as a loop crashlab did not write calls it: issues and comments, each for an effect it names."""

from __future__ import annotations

from crashlab.job import Call
from crashlab.world import World
from crashlab.world.tracker import Record


class TrackerClient:
    """The issue tracker your tools talk to, over the world's wire.

    Every record is tagged with the intended `effect` it serves: the sweep counts records per effect.
    A keyed tracker answers a known key with its first answer and changes nothing; a ``lookup``
    tracker ignores keys on requests but answers `lookup`; a ``fencing`` one also fences a key its
    lookup did not find, and refuses a request under it (`crashlab.world.Fenced`); a ``keyless``
    one does none of these. Each changing request commits before it answers, then passes the
    crash point ``accepted``.
    """

    def __init__(self, world: World):
        self._world = world

    def create_issue(self, effect: str, title: str, body: str = "", key: str | None = None) -> int:
        """File an issue; its number."""
        args = {"title": title, "body": body}
        return self._world.wire.send(Call(effect, "create_issue", args), args, key)

    def comment(self, effect: str, issue: int, body: str, key: str | None = None) -> int:
        """Comment on issue `issue`; the comment's number."""
        args = {"issue": issue, "body": body}
        return self._world.wire.send(Call(effect, "comment", args), args, key)

    def search(self, query: str) -> list[int]:
        """Read only: the issues whose text mentions `query`."""
        return self._world.tracker.search(Call("search", "search", {"query": query}), query)

    def lookup(self, key: str) -> int | None:
        """The first answer to a request with this key, or None (keyed, lookup and fencing trackers only)."""
        return self._world.tracker.lookup(key)

    @property
    def records(self) -> list[Record]:
        return self._world.tracker.records
