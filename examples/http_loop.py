"""A triage loop whose tools call an issue service over plain HTTP, and know nothing of crashlab.

It files two issues and comments on the first, keeping its progress in a JSON file that it replaces
atomically (write, fsync, rename, fsync the folder) after each step. ``plain`` sends its requests as
they are; ``keyed`` sends each with an ``Idempotency-Key`` made of its run ID and the step, so a
retry after a crash is answered, not applied again; ``ladder`` also saves an attempt marker before
each request, and settles a marker with no result on the resolution ladder. The run ID is saved before any request
carries it: a key must be the same in every process of the run.

Sweep it against crashlab's service, every process killed for real at every point::

    crashlab sweep --loop examples/http_loop.py:plain --effects examples/http_loop.yaml
    crashlab sweep --loop examples/http_loop.py:keyed --effects examples/http_loop.yaml

Where it finds the service (``CRASHLAB_TRACKER_URL``) and its folder (``CRASHLAB_RUN_DIR``) it reads
when it runs, not when it is imported: a sweep imports it once and forks each process from there.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import uuid
from pathlib import Path

try:  # crash points of its own, beside the service's: optional, and nothing without crashlab
    from crashlab import point
except ImportError:
    def point(label: str) -> None:
        pass

STEPS = [
    ("A", "issue", "Login fails on Safari"),
    ("B", "issue", "Export times out"),
    ("C", "comment", "Same root cause as the export timeout"),
]


def call(url: str, payload: dict | None = None, key: str | None = None) -> dict:
    """One JSON request (a POST when it has a payload); the answer, or urllib's HTTPError."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    data = None if payload is None else json.dumps(payload).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=30) as response:
        return json.load(response)


def service() -> str:
    return os.environ.get("CRASHLAB_TRACKER_URL", "http://127.0.0.1:8000")


#: How often `post` sends a request that got no answer, as an HTTP client's retry policy does.
TRIES = 3


def post(path: str, payload: dict, key: str | None) -> int:
    """POST JSON to the service; the new record's number. A request that got no answer in time (504) or
    whose connection failed is sent again, with the same key: its outcome is unknown."""
    for attempt in range(1, TRIES + 1):
        try:
            return call(service() + path, payload, key)["number"]
        except urllib.error.HTTPError as error:
            if error.code not in (502, 503, 504) or attempt == TRIES:
                raise
        except urllib.error.URLError:
            if attempt == TRIES:
                raise
    raise AssertionError("unreachable")


def send(kind: str, text: str, key: str | None, done: dict) -> int:
    """One step's request: file the issue, or comment on A's."""
    if kind == "issue":
        return post("/issues", {"title": text, "body": ""}, key)
    return post(f"/issues/{done['A']}/comments", {"body": text}, key)


def save(path: Path, progress: dict) -> None:
    """Replace the progress file whole: a crash leaves the old one or the new one, never half of either."""
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w") as file:
        json.dump(progress, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def begin() -> tuple[Path, dict]:
    """Where the progress is kept, and what it says: a new run saves its run ID before anything else."""
    saved = Path(os.environ.get("CRASHLAB_RUN_DIR", ".")) / "progress.json"
    if saved.exists():
        return saved, json.loads(saved.read_text())
    progress = {"run": uuid.uuid4().hex, "done": {}}
    save(saved, progress)
    return saved, progress


def triage(keyed: bool) -> None:
    saved, progress = begin()
    done = progress["done"]
    for step, kind, text in STEPS:
        if step in done:
            continue
        key = f"{progress['run']}:{step}" if keyed else None
        done[step] = send(kind, text, key, done)
        point("answered")
        save(saved, progress)
        point("saved")


def settle(step: str, kind: str, text: str, key: str, done: dict, progress: dict) -> int | None:
    """The resolution ladder for a step with a marker and no result: did its request happen?

    Ask the service first (the lookup rung: the first answer kept under the key); a service that
    keeps no keys answers 501, and then a person is asked. None: it did not happen, send it. A
    service that fences a key its lookup did not find will refuse it from now on, so the step
    retires it (saved before anything is sent under the next).
    """
    try:
        return call(f"{service()}/idempotency/{key}")["body"]["number"]
    except urllib.error.HTTPError as error:
        if error.code == 404:
            if json.load(error).get("fenced"):
                progress["retired"].append(step)
            return None
        if error.code != 501:
            raise
    person = os.environ.get("CRASHLAB_PERSON_URL", service() + "/person")
    question = {"title": text} if kind == "issue" else {"issue": done["A"], "body": text}
    numbers = call(f"{person}/questions", question)["numbers"]
    return numbers[0] if numbers else None


def key_of(progress: dict, step: str) -> str:
    """The step's key: its run ID and step, and a generation for each key a fencing lookup retired."""
    retired = progress["retired"].count(step)
    return f"{progress['run']}:{step}" + (f":{retired + 1}" if retired else "")


def ladder() -> None:
    """Markers and the ladder: a marker saved before each request, and a restart that finds one with no
    result settles it (lookup, else a person) before it sends anything. The model plans the run
    once, a paid call reported to the service's counter, and the plan is saved."""
    saved, progress = begin()
    if "plan" not in progress:
        model = os.environ.get("CRASHLAB_MODEL_URL", service() + "/model")
        call(f"{model}/calls", {})
        point("model-replied")  # a death here pays for the plan again
        progress.update(plan=[step for step, _, _ in STEPS], marked=[], retired=[])
        save(saved, progress)
    done = progress["done"]
    for step, kind, text in STEPS:
        if step in done:
            continue
        if step in progress["marked"]:
            number = settle(step, kind, text, key_of(progress, step), done, progress)
            if number is not None:
                done[step] = number
                save(saved, progress)
                continue
        progress["marked"].append(step)
        save(saved, progress)
        point("marked")
        done[step] = send(kind, text, key_of(progress, step), done)
        point("answered")
        save(saved, progress)
        point("saved")


def plain() -> None:
    triage(keyed=False)


def keyed() -> None:
    triage(keyed=True)
