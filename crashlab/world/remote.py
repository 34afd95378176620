"""The tracker as a running crashlab service (`crashlab serve`), reached over HTTP: `crashlab run --service`.

The agent's loop talks to it as to the tracker in its run directory: the same requests, the same
crash points, the same `Fenced` refusal. What differs is where the records live: in another
process, which no death of the agent's touches, as a real issue tracker's database. The service
knows no call IDs, so its records are told apart by what they are: each is attributed to the job's
call that means it (`crashlab.world.effects`), as a sweep of a loop of yours attributes them.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from crashlab.errors import BadInput
from crashlab.job import Call, Job, shown
from crashlab.protocols.points import Recorder
from crashlab.world.effects import Effect, attribute, of_job
from crashlab.world.tracker import Fenced, Modes, Record, TrackerMode, refused

#: No proxy: a service named by URL is reached directly, as a tool's client in a lab reaches it.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
#: How long a request may take before the service is taken for gone, in seconds.
TIMEOUT = 30.0
#: Where `crashlab run --service` finds the token the service's controls need (also `--service-token`).
TOKEN_VARIABLE = "CRASHLAB_SERVICE_TOKEN"


class ServiceGone(BadInput):
    """The service did not answer, or answered what crashlab's service never does: one line, and the run
    resumes when it is run again against a service that answers."""


@dataclass(frozen=True)
class Answer:
    """The service's answer: its status, its JSON body (an error's too), and whether it replays a kept one."""

    status: int
    body: Any
    replayed: bool = False


def exchange(base: str, method: str, path: str, payload: dict[str, Any] | None = None,
             key: str | None = None, token: str | None = None) -> Answer:
    """One JSON request to the service at `base`, with `key` as its Idempotency-Key, and `token` for its controls.

    `OSError` (refused, reset, timed out), `http.client.HTTPException` (not HTTP) or `ValueError` (not JSON) when
    no answer came."""
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key is not None else {}),
               **({"Authorization": f"Bearer {token}"} if token is not None else {})}
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(base + path, data, headers, method=method)
    try:
        with DIRECT.open(request, timeout=TIMEOUT) as answer:
            return Answer(answer.status, json.load(answer), answer.headers.get("Idempotent-Replayed") == "true")
    except urllib.error.HTTPError as error:
        with error:
            return Answer(error.code, json.loads(error.read() or b"{}"))


def call(url: str, method: str, path: str, payload: dict[str, Any] | None = None, key: str | None = None,
         token: str | None = None) -> Answer:
    """`exchange`, with a service that does not answer, or fails, as one line (`ServiceGone`), and one that
    wants its controls' token as another."""
    try:
        answer = exchange(url, method, path, payload, key, token)
    except http.client.HTTPException as error:  # a port that speaks something else: BadStatusLine, and more
        raise ServiceGone(f"the service at {url} does not speak HTTP: to {method} {path} it said "
                          f"{shown(str(error))} ({type(error).__name__}); is it the URL crashlab serve printed?") \
            from None
    except (OSError, ValueError) as error:
        raise ServiceGone(f"the service at {url} did not answer {method} {path} ({error}); the run resumes when run "
                          "again") from None
    if answer.status == 401:
        said = "without its token" if token is None else "with a token that is not its own"
        raise BadInput(f"the service at {url} refused {method} {path} {said}: set {TOKEN_VARIABLE} to the token "
                       "crashlab serve printed as it started")
    if answer.status >= 500 or not isinstance(answer.body, dict):
        raise ServiceGone(f"the service at {url} failed {method} {path}: {answer.status} {answer.body}")
    return answer


def served_mode(url: str, token: str | None) -> str:
    """The tracker mode the service at `url` runs in."""
    return str(call(url.rstrip("/"), "GET", "/_crashlab/state", token=token).body.get("tracker"))


def served_records(records: list[dict[str, Any]], effects: tuple[Effect, ...]) -> list[Record]:
    """The service's records (its ``/_crashlab/state``), each attributed to the effect it is."""
    held = [Record(r["kind"], r["number"], "", r["key"], r["issue"],
                   f"{r['title']}\n{r['body']}" if r["kind"] == "issue" else r["body"]) for r in records]
    return list(attribute(held, effects))


class RemoteTracker(Modes):
    """The tracker at `url`, in `mode`, which must be the service's own: a run does not change its rules.
    `token` opens its controls, through which it reads the records."""

    def __init__(self, points: Recorder, url: str, mode: TrackerMode, job: Job, token: str | None):
        self.points = points
        self.url = url.rstrip("/")
        self.mode = mode
        self.token = token
        self.effects: tuple[Effect, ...] = of_job(job)
        if (served := served_mode(self.url, token)) != mode:
            raise ServiceGone(f"the service at {self.url} is a {served} tracker, and this run is {mode}: a run keeps "
                              "its tracker's rules")

    def _call(self, method: str, path: str, payload: dict[str, Any] | None = None, key: str | None = None) -> Answer:
        return call(self.url, method, path, payload, key, self.token)

    def state(self) -> dict[str, Any]:
        return self._call("GET", "/_crashlab/state").body

    @property
    def records(self) -> list[Record]:
        """The service's records, each attributed to the job's call that means it."""
        return served_records(self.state()["records"], self.effects)

    def request(self, call: Call, args: dict[str, Any], key: str | None = None) -> int:
        """Send a changing request; the service commits it before it answers, and a death after that is at
        ``accepted``, as with the tracker in the run directory."""
        self.points.guard("a tracker request made")
        path, payload = ("/issues", {"title": args["title"], "body": args["body"]}) if call.tool == "create_issue" \
            else (f"/issues/{int(args['issue'])}/comments", {"body": args["body"]})
        answer = self._call("POST", path, payload, key)
        if answer.status == 409 and self.fences:
            raise Fenced(f"call {call.id}'s key {key} was fenced by a lookup: the service refuses it")
        if answer.status == 404 and call.tool == "comment":
            raise refused(self.points, call, key, args["issue"])
        if answer.status != 201:
            raise ServiceGone(f"the service at {self.url} refused call {call.id} ({call.tool}): {answer.status} "
                              f"{answer.body.get('error', answer.body)}")
        number = int(answer.body["number"])
        self.points.note("request", call.tool, call=call.id, key=key, applied=not answer.replayed, answer=number,
                         forgot=False)
        self.points.hit("accepted")
        return number

    def search(self, call: Call, query: str) -> list[int]:
        self.points.guard("a search request made")
        answer = self._call("GET", "/search?" + urllib.parse.urlencode({"q": query}))
        found = [issue["number"] for issue in answer.body["issues"]]
        self.points.note("request", call.tool, call=call.id, key=None, applied=False, answer=found)
        return found

    def lookup(self, key: str) -> int | None:
        self.points.guard("a lookup request made")
        if not self.answers_lookups:
            raise RuntimeError("a keyless tracker cannot be asked about a key")
        found = self._call("GET", "/idempotency/" + urllib.parse.quote(key, safe=""))
        number = found.body["body"].get("number") if found.status == 200 else None  # None: kept, a refusal
        self.points.note("lookup", "key", key=key, answer=number, fenced=bool(found.body.get("fenced")))
        return number

    def made_by(self, call_id: str) -> list[Record]:
        return [r for r in self.records if r.call == call_id]

    def keys(self) -> dict[str, int]:
        """What the service keeps under its keys is its own: a run reads it only through `lookup`."""
        return {}

    def key_times(self) -> dict[str, float]:
        return {}

    def unsaved(self) -> tuple[int, frozenset[str]]:
        """Nothing: the service commits a record and its key before it answers."""
        return 0, frozenset()

    def fenced(self) -> frozenset[str]:
        return frozenset()
