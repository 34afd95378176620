"""`crashlab record`: a program run once against a real model, written down as a job and its effects.

The program runs as each process of a sweep runs it (`crashlab.runners.served`): in a run directory of
its own, standard input closed, its tools calling a crashlab service at ``CRASHLAB_TRACKER_URL``. Its
model is the provider at ``--upstream``, reached through a recording proxy (`crashlab.service.recording`)
that its SDK finds at ``OPENAI_BASE_URL`` or ``ANTHROPIC_BASE_URL``. What comes of it:

- the job: the model's replies in order, each the tools it called with their arguments, then its final
  answer. A comment whose issue is the number an earlier ``create_issue`` gave is written ``$A``, as a
  hand-written job says it, so a sweep's restarts, which number issues anew, keep to the script;
- the effects: what the run left in the service, each by what it is (an issue by its title, a comment by
  the issue and its body), named for the call that made it.

A run that cannot be written as a job (the upstream out of reach or answering what is no reply, a
program that fails, never asks the model, or asks it two conversations at once) is refused in one line,
and nothing is written.
"""

from __future__ import annotations

import os
import shlex
import socket
import string
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count, product
from pathlib import Path
from typing import Any

import yaml

from crashlab.errors import BadInput, HarnessError, JobError
from crashlab.job import parse_job, shown
from crashlab.job.reader import TEXT_LIMITS
from crashlab.loops import yours
from crashlab.protocols.runner import TIME_LIMIT
from crashlab.runners.group import Boundary, Child, Hung, Outlived
from crashlab.scratch import remove, scratch
from crashlab.service.process import ServiceProcess
from crashlab.service.recording import Exchange, Recording
from crashlab.service.script import Result, Said, Script, issue_number
from crashlab.world.effects import effects_of

#: How long the upstream may take to accept a connection before the run starts, in seconds.
REACH_TIMEOUT = 5.0
#: The variable that names a program's run directory, as a sweep names it (`crashlab.runners.served.RUN_DIR`).
RUN_DIR = "CRASHLAB_RUN_DIR"


class RecordError(BadInput):
    """A run that cannot be written as a job: one line, and nothing written."""


@dataclass(frozen=True)
class Recorded:
    """What a run came to: the job and the effects, each as its YAML file says it."""

    job: dict[str, Any]
    effects: dict[str, dict[str, str]]

    @property
    def summary(self) -> str:
        turns = self.job["turns"]
        calls = sum(len(turn.get("calls", ())) for turn in turns)
        return f"{len(turns)} replies ({calls} tool calls) and {len(self.effects)} effects"


def record(argv: tuple[str, ...], upstream: str, name: str = "recorded", limit: float = TIME_LIMIT) -> Recorded:
    """Run the program `argv` once against the model at `upstream`, through the recording proxy, and a crashlab
    service for its tools; the job and the effects it comes to."""
    command = shlex.join(argv)
    _, program = yours.program(command)
    reach(upstream)
    root = scratch("record")
    try:
        (root / "run").mkdir()
        (root / "service").mkdir()
        with ServiceProcess.start(root / "service", control=False) as service, Recording(upstream) as proxy:
            env = {**os.environ, **service.env(), "OPENAI_BASE_URL": proxy.url + "/v1",
                   "ANTHROPIC_BASE_URL": proxy.url, RUN_DIR: str(root / "run")}
            for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # the user's, passed on; else one the SDKs take
                env.setdefault(key, "crashlab-record")
            code, said = run(program.argv, root, env, limit)
            if proxy.problems:
                raise RecordError(proxy.problems[0])
            if code != 0:
                raise RecordError(f"{command} exited with status {code}{said}: a recording is of a run that ends "
                                  "well")
            records = service.state()["records"]
        job = job_of(proxy.exchanges, name, command)
        return Recorded(job, effects_from(records, job))
    finally:
        remove(root)


def reach(upstream: str) -> None:
    """Refuse, before the program runs, an upstream that is no HTTP URL or accepts no connection (one behind the
    environment's proxy is left to the recording's first request, which says what went wrong as well)."""
    parts = urllib.parse.urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RecordError(f"--upstream {shown(upstream)} is not an http:// or https:// URL (a provider's base URL, "
                          "as https://api.openai.com/v1)")
    if urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(parts.hostname):
        return  # reached through the environment's proxy, as the recording's requests are: they will say
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname, port), timeout=REACH_TIMEOUT).close()
    except (OSError, ValueError) as error:
        raise RecordError(f"cannot reach the upstream at {upstream}: {getattr(error, 'strerror', None) or error}"
                          ) from None


def run(argv: tuple[str, ...], root: Path, env: dict[str, str], limit: float) -> tuple[int, str]:
    """The program run in `root`/run, standard input closed and its output kept in `root`: its exit status, and the
    last line it wrote to stderr (as ``: LINE``), if any.

    It runs as a sweep runs each process (`Child`, inside a `Boundary`: a cgroup of its own, else its process
    group), so whatever it started goes when it does: past `limit` seconds, on Ctrl-C, and when it exits, rather
    than be left to post to the recording's service after the recording is written. A helper that left the
    boundary and outlived it fails the recording, said as a sweep says it."""
    boundary = Boundary.new()
    if boundary.cgroup is not None:  # the program's first act, before it can start anything: join the cgroup
        argv = ("/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(boundary.cgroup.path / "cgroup.procs"), *argv)
    with open(root / "stdout", "wb") as out, open(root / "stderr", "wb") as err:
        try:
            process = subprocess.Popen(argv, cwd=root / "run", env=env, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=err, process_group=0)
        except OSError as error:
            if boundary.cgroup is not None:
                boundary.cgroup.remove()
            raise RecordError(f"cannot start {shlex.join(argv)}: {error.strerror or error}") from None
    child = Child(process.pid, limit, boundary)
    try:
        status = waited(child)
    except Hung:
        raise RecordError(f"{shlex.join(argv)} ran past --time-limit {limit:g} s, and was killed") from None
    except Outlived as outlived:
        raise HarnessError(f"a process of the recorded run outlived its program: {outlived}") from None
    finally:
        if child.status is not None:  # reaped by `child`: the Popen must not wait for its pid again
            process.returncode = os.waitstatus_to_exitcode(child.status)
    lines = (root / "stderr").read_bytes().decode(errors="replace").strip().splitlines()
    return os.waitstatus_to_exitcode(status), f" ({lines[-1].strip()[:160]})" if lines else ""


def waited(child: Child) -> int:
    """Wait for the program to end, and reap it, as a sweep does each process: its wait status. `Hung` past its time
    limit, `Outlived` if a process it started is alive after its kill. However the wait ends (past the limit, on
    Ctrl-C), the program goes, with all it started."""
    ended = os.pidfd_open(child.pid)
    try:
        child.ready([ended])
        return child.reap()
    finally:
        os.close(ended)
        if child.status is None:
            child.end()


def call_names() -> Iterator[str]:
    """The names a recorded job gives its calls, in order: A to Z, then AA, AB..."""
    for width in count(1):
        for letters in product(string.ascii_uppercase, repeat=width):
            yield "".join(letters)


def job_of(exchanges: list[Exchange], name: str, command: str) -> dict[str, Any]:
    """The job a run's model calls make, as its YAML file says it; `RecordError` if they are not one conversation
    asked in turn, ending in a final answer, or come to a job that does not load."""
    if not exchanges:
        raise RecordError(f"{command} never called the model: point its client at OPENAI_BASE_URL or "
                          "ANTHROPIC_BASE_URL, as the official SDKs do, to record its replies")
    for k, exchange in enumerate(exchanges):
        said = [entry for entry in exchange.asked.conversation if isinstance(entry, Said)]
        if len(said) != k:
            raise RecordError(f"the program's model call {k + 1} holds {len(said)} of the model's replies where {k} "
                              "came before it: a recording is of one conversation, asked in turn")
        for j, reply in enumerate(said):
            if [call.id for call in reply.calls] != [call.id for call in exchanges[j].heard.calls]:
                raise RecordError(f"the program's model call {k + 1} holds reply {j + 1} with other tool calls than "
                                  "the model gave it: a recording is of one conversation, asked in turn")
        if k < len(exchanges) - 1 and not exchange.heard.calls:
            raise RecordError(f"the model's reply {k + 1} is a final answer (no tool calls), and the program asked "
                              "again: a recording is of one conversation, ending in its answer")
    if exchanges[-1].heard.calls:
        raise RecordError(f"the model's last reply calls {', '.join(c.name for c in exchanges[-1].heard.calls[:4])}, "
                          "and the program ended without sending their results back: a recording ends in the "
                          "model's final answer")
    results = {entry.call_id: entry.text for entry in exchanges[-1].asked.conversation if isinstance(entry, Result)}
    names = call_names()
    ids: dict[str, str] = {}  # the model's tool-call ID: the job's
    issues: dict[int, str] = {}  # an issue number an earlier create_issue's result gave: its call
    turns: list[dict[str, Any]] = []
    for k, exchange in enumerate(exchanges[:-1], start=1):
        calls = []
        for call in exchange.heard.calls:
            if not isinstance(call.arguments, dict):
                raise RecordError(f"the model's reply {k} calls {call.name} with arguments that are not a JSON "
                                  f"object ({shown(call.arguments)})")
            ids[call.id] = ident = next(names)
            args = dict(call.arguments)
            if call.name == "comment" and type(args.get("issue")) is int and args["issue"] in issues:
                args["issue"] = f"${issues[args['issue']]}"
            calls.append({"id": ident, "tool": call.name, "args": args})
        for call in exchange.heard.calls:  # after the reply: a comment made beside its issue cannot know its number
            if call.name == "create_issue" and (number := issue_number(results.get(call.id, ""))) is not None:
                issues.setdefault(number, ids[call.id])
        turns.append({"calls": calls})
    turns.append({"answer": exchanges[-1].heard.text[:TEXT_LIMITS["answer"]]})  # cut to the limit: only played back
    description = f"recorded from: {' '.join(command.split())}"
    job = {"name": name, "description": description[:TEXT_LIMITS["description"] - 1] + "…"
           if len(description) > TEXT_LIMITS["description"] else description, "run": f"{name}-run-1", "turns": turns}
    try:
        Script(parse_job(job, "the recorded job"))
    except JobError as error:
        raise RecordError(f"{error} (the model's replies make no job crashlab can play)") from None
    return job


def effects_from(records: list[dict[str, Any]], job: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What the run left in the service, each record an effect by what it is, named for the job's call that made it
    (else for the record); `RecordError` if it left nothing, or two records that could not be told apart."""
    if not records:
        raise RecordError("the run left nothing in crashlab's service at CRASHLAB_TRACKER_URL: there is no effect to "
                          "sweep against (do its tools call that service?)")
    calls = [call for turn in job["turns"] for call in turn.get("calls", ())]
    effects: dict[str, dict[str, str]] = {}
    issue_effect: dict[int, str] = {}
    for record in records:
        if record["kind"] == "issue":
            made = [c["id"] for c in calls if c["tool"] == "create_issue" and c["args"].get("title") == record["title"]]
            effect = next((n for n in made if n not in effects), f"issue-{record['number']}")
            effects[effect] = {"issue": record["title"]}
            issue_effect[record["number"]] = effect
        else:
            on = issue_effect.get(record["issue"], "")
            made = [c["id"] for c in calls if c["tool"] == "comment" and c["args"].get("body") == record["body"]]
            effect = next((n for n in made if n not in effects), f"comment-{record['number']}")
            effects[effect] = {"comment": on, "body": record["body"]}
    try:
        effects_of(effects, "the recorded effects")
    except BadInput as error:
        raise RecordError(f"{error}: a recording is of a run that makes each effect once") from None
    return effects


def written(recorded: Recorded, job_out: Path, effects_out: Path) -> None:
    """Write the job and the effects, each whole (a file appears complete or not at all)."""
    put(job_out, job_text(recorded.job))
    put(effects_out, "# What the recorded run left in crashlab's service, once each, by what it is.\n"
        + yaml.safe_dump(recorded.effects, sort_keys=False, allow_unicode=True, width=120))


def job_text(job: dict[str, Any]) -> str:
    """The job as a shipped job is written: its fields, then a turn's calls a line each."""
    def line(value: Any) -> str:
        said = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, allow_unicode=True, width=1 << 20)
        return said.strip().removesuffix("...").strip()  # a scalar's document ends with "...", which a line does not

    lines = ["# Recorded by crashlab record: the model's replies in order, each the tools it called, then its answer.",
             *(f"{field}: {line(job[field])}" for field in ("name", "description", "run")), "turns:"]
    for turn in job["turns"]:
        if "answer" in turn:
            lines.append(f"  - answer: {line(turn['answer'])}")
            continue
        lines.append("  - calls:")
        lines += [f"      - {line(call)}" for call in turn["calls"]]
    return "\n".join(lines) + "\n"


def put(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise RecordError(f"cannot write {path}: {error.strerror or error}") from None
