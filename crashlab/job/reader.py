"""Reading a job file, and finding the jobs that ship with crashlab.

The reader trusts nothing in the file. It reads at most MAX_JOB_BYTES from a regular file, bounds
the YAML's nesting and its size with aliases expanded, refuses duplicate keys and overlong integers
while parsing, and then checks every field's type and size before anything walks a value: a job
that loads can be swept on any store by any loop that runs its tools (crashlab's own run crashlab's
three; a tool of a program's own, any name and JSON arguments, is played to a program as the model's
reply), and a job that does not is one `JobError` naming the file, the place and the problem.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import stat
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from crashlab.errors import JobError
from crashlab.job.calls import CALL_FLAGS, TOOLS, Call, Job, Turn
from crashlab.job.values import kind, shown

#: A name, run ID or call ID: ASCII letters, digits and ``_.-``, starting with a letter or digit.
#: IDs go into idempotency keys, checkpoint files and scenario stories, so they are plain ASCII:
#: no blanks, line breaks, control characters or look-alike letters that would make two IDs that
#: print the same compare different.
ID_GRAMMAR = "[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
ID_RULE = "1 to 64 ASCII letters, digits, '_', '.' or '-', starting with a letter or digit"
#: The longest each text may be, in characters. Titles and queries are one line; bodies, the
#: answer and the description may hold line breaks and tabs, never other control characters.
TEXT_LIMITS = {"title": 256, "query": 256, "body": 4096, "answer": 4096, "description": 200}
ONE_LINE = frozenset({"title", "query", "description"})
#: Texts that say something only when they are not blank.
NOT_BLANK = frozenset({"title", "query"})
#: A tool of a program's own (`own_call`): named as OpenAI and Anthropic take a function's name.
TOOL_GRAMMAR = "[A-Za-z0-9_-]{1,64}"
TOOL_RULE = "1 to 64 ASCII letters, digits, '_' or '-', as the model providers take a function's name"
#: How deep a program's tool's arguments may nest (the YAML's own bound is deeper than any real tool's schema).
MAX_JSON_DEPTH = 24
SURROGATE = re.compile(r"[\ud800-\udfff]")
#: Issue numbers a comment may name: positive, and within a real tracker's 32-bit range.
MAX_ISSUE = 2**31 - 1

#: Bounds on the file itself, checked before and while parsing so no file can exhaust memory or time.
MAX_JOB_BYTES = 1 << 20  # 1 MiB (the YAML's own bounds are the YAML reader's, `crashlab.job.yamlfile`)
#: The most calls a job makes, in all its turns. Every save holds every call so far, and `explain`,
#: `points` and a sweep keep each save's checkpoint, so their memory grows with the square of the
#: calls: `crashlab points` on a job of 1,000 calls peaks near 370 MB (in 7 s), on one of 5,000 it
#: passed 3.4 GB and had not finished in two minutes.
MAX_CALLS = 1000

#: Where the shipped jobs live: scenarios/ in the checkout, packaged as crashlab.scenarios.
SHIPPED = "crashlab.scenarios"



# -- reading the file ------------------------------------------------------------------------------


def load_job(path: str | Path, source: str | None = None) -> Job:
    """Read and validate a job file; every problem becomes a `JobError` naming the file.

    `source` is how messages and results name the job (the path by default; a shipped job's name).
    """
    source = str(path) if source is None else source
    data = read_bytes(path, source)
    from crashlab.job.yamlfile import parse_yaml  # PyYAML is imported only when a job is read

    parsed = parse_yaml(utf8(data, source), source)
    job = parse_job(parsed, source)
    return replace(job, sha256=hashlib.sha256(data).hexdigest())


def read_bytes(path: str | Path, source: str, what: str = "job file",
               error: type[ValueError] = JobError, limit: int = MAX_JOB_BYTES) -> bytes:
    """A regular file's bytes, at most `limit` of them, or `error` naming `source` and the problem.

    The file is opened without blocking and checked before a byte is read, so a FIFO cannot hang the
    reader and /dev/zero cannot fill memory. The golden-table reader uses it too.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"{source}: no such {what}") from None
    except OSError as problem:
        raise error(f"{source}: cannot read: {problem.strerror}") from None
    except ValueError:  # an embedded NUL byte
        raise error(f"{source}: not a valid path") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise error(f"{source}: is a directory, not a {what}")
        raise error(f"{source}: not a regular file (a pipe, device or socket); give a {what}")
    with os.fdopen(fd, "rb") as file:
        try:
            data = file.read(limit + 1)
        except OSError as problem:
            raise error(f"{source}: cannot read: {problem.strerror}") from None
    if len(data) > limit:
        raise error(f"{source}: larger than {limit >> 20} MiB, the most a {what} may be")
    return data


def utf8(data: bytes, source: str, error: type[ValueError] = JobError) -> str:
    """`data` as UTF-8 text, or `error` naming the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise error(f"{source}: not UTF-8 text (byte {data[problem.start]:#04x} at offset {problem.start})") from None


# -- checking the contract -------------------------------------------------------------------------


def id_problem(value: Any, what: str) -> str | None:
    """Why `value` is not a valid ID, or None when it is."""
    if not isinstance(value, str):
        return f"{what} must be a string (got {kind(value)})"
    if not re.fullmatch(ID_GRAMMAR, value):
        return f"{what} {shown(value)} is not a valid ID: {ID_RULE}"
    return None


#: Control characters and lone surrogates, which no text may hold; line breaks and tabs are allowed
#: outside ONE_LINE fields.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def text_problem(value: Any, what: str) -> str | None:
    """Why `value` is not a valid text for the field `what`, or None when it is."""
    if not isinstance(value, str):
        return f"{what} must be a string (got {kind(value)})"
    limit = TEXT_LIMITS[what]
    if len(value) > limit:
        return f"{what} is {len(value)} characters long (at most {limit})"
    if what in NOT_BLANK and not value.strip():
        return f"{what} must not be blank"
    found = (CONTROL_ONE_LINE if what in ONE_LINE else CONTROL).search(value)
    if found:
        breaks = ", no line breaks" if what in ONE_LINE else ""
        return f"{what} holds the character {found.group()!a} (no control characters{breaks})"
    return None


def parse_job(data: Any, source: str = "<job>") -> Job:
    """Build a `Job` from already-parsed YAML, checking the whole contract."""

    def fail(place: str, problem: str) -> JobError:
        return JobError(f"{source}: {place}: {problem}" if place else f"{source}: {problem}")

    if not isinstance(data, dict):
        raise fail("", f"a job is a mapping with 'name' and 'turns' (got {kind(data)})")
    unknown = [key for key in data if key not in ("name", "run", "description", "turns")]
    if unknown:
        raise fail("", f"unknown field {shown(unknown[0])} (valid: name, run, description, turns)")
    if "name" not in data:
        raise fail("name", f"required: {ID_RULE}")
    if problem := id_problem(data["name"], "name"):
        raise fail("", problem)
    name = data["name"]
    run = data.get("run", f"{name}-run-1")
    if problem := id_problem(run, "run"):
        raise fail("", problem)
    description = data.get("description", "")
    if problem := text_problem(description, "description"):
        raise fail("", problem)
    raw_turns = data.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        raise fail("turns", f"required, a non-empty list of turns (got {kind(raw_turns)})")

    turns: list[Turn] = []
    created: set[str] = set()
    seen: set[str] = set()
    for t, raw in enumerate(raw_turns, start=1):
        place = f"turn {t}"
        if not isinstance(raw, dict) or len(raw) != 1 or not ({"calls", "answer"} & set(raw)):
            raise fail(place, "a turn is either {calls: [...]} or {answer: \"...\"}")
        if "answer" in raw:
            if problem := text_problem(raw["answer"], "answer"):
                raise fail(place, problem)
            if t != len(raw_turns):
                raise fail(place, "the answer must be the last turn, and there is exactly one")
            turns.append(Turn(answer=raw["answer"]))
            continue
        if not isinstance(raw["calls"], list) or not raw["calls"]:
            raise fail(place, f"calls must be a non-empty list (got {kind(raw['calls'])})")
        calls = []
        for c, raw_call in enumerate(raw["calls"], start=1):
            if len(seen) == MAX_CALLS:
                raise fail(f"{place} call {c}", f"a job makes at most {MAX_CALLS} calls in all its turns, and this is "
                           "one more (the memory explain and a sweep need grows with the square of the calls)")
            call = parse_call(raw_call, partial(fail, f"{place} call {c}"), created)
            if call.id in seen:
                raise fail(f"{place} call {c}", f"duplicate call ID {call.id!r}")
            seen.add(call.id)
            if call.tool == "create_issue":
                created.add(call.id)
            calls.append(call)
        turns.append(Turn(calls=tuple(calls)))
    if not turns[-1].is_final:
        raise fail("turns", "missing the final answer: the last turn must be {answer: \"...\"}")
    return Job(name=name, run=run, turns=tuple(turns), source=source, description=description)


def parse_call(raw: Any, fail: Callable[[str], JobError], created: set[str]) -> Call:
    """One call, every field's type checked before its value is used."""
    if not isinstance(raw, dict):
        raise fail(f"a call is a mapping with id, tool and args (got {kind(raw)})")
    unknown = [key for key in raw if key not in ("id", "tool", "args", *CALL_FLAGS)]
    if unknown:
        raise fail(f"unknown field {shown(unknown[0])} (valid: id, tool, args, {', '.join(CALL_FLAGS)})")
    if problem := id_problem(raw.get("id"), "id"):
        raise fail(problem)
    tool, args = raw.get("tool"), raw.get("args", {})
    if not isinstance(tool, str):
        raise fail(f"tool must be a string (got {kind(tool)})")
    if not isinstance(args, dict):
        raise fail(f"args must be a mapping (got {kind(args)})")
    for flag in CALL_FLAGS:
        if not isinstance(raw.get(flag, False), bool):
            raise fail(f"{flag} must be true or false (got {kind(raw[flag])})")
    if tool not in TOOLS:
        return own_call(raw, tool, args, fail)
    wanted = TOOLS[tool]
    if len(args) != len(wanted) or any(name not in args for name in wanted):
        got = ", ".join(shown(name) for name in list(args)[:len(wanted) + 2]) or "none"
        more = ", …" if len(args) > len(wanted) + 2 else ""
        raise fail(f"{tool} takes exactly the args {', '.join(wanted)} (got {got}{more})")
    for name in wanted:
        if name != "issue" and (problem := text_problem(args[name], name)):
            raise fail(problem)
    if tool == "comment":
        issue = args["issue"]
        if isinstance(issue, str):
            if not issue.startswith("$") or issue[1:] not in created:
                raise fail(f"issue {shown(issue)} must be an integer or \"$ID\" of an earlier create_issue call")
        elif not isinstance(issue, int) or isinstance(issue, bool):
            raise fail(f"issue must be an integer or \"$ID\" of an earlier create_issue call (got {kind(issue)})")
        elif not 1 <= issue <= MAX_ISSUE:
            raise fail(f"issue {issue} is out of range (1..{MAX_ISSUE})")
    return Call(id=raw["id"], tool=tool, args={name: args[name] for name in wanted},
                **{flag: raw.get(flag, False) for flag in CALL_FLAGS})


def own_call(raw: dict[str, Any], tool: str, args: dict[Any, Any], fail: Callable[[str], JobError]) -> Call:
    """A call of a tool of a program's own: any name a provider takes, any JSON arguments. crashlab plays it to a
    program (``--command``) as the model's reply and knows nothing more of it; its own loops cannot run it."""
    if not re.fullmatch(TOOL_GRAMMAR, tool):
        raise fail(f"tool {shown(tool)} is none of crashlab's ({', '.join(TOOLS)}) nor a tool's name: {TOOL_RULE}")
    if problem := json_problem(args, "args"):
        raise fail(problem)
    if flagged := [flag for flag in CALL_FLAGS if flag in raw]:
        raise fail(f"{flagged[0]} is for crashlab's own tools ({', '.join(TOOLS)}), which its agent loop runs; "
                   f"{tool} is a program's own")
    return Call(id=raw["id"], tool=tool, args=dict(args))


def json_problem(value: Any, where: str, depth: int = 0) -> str | None:
    """Why `value` is not JSON a model could send as a tool's arguments (a date, a set, a key that is not text, a
    number that is not finite, a lone surrogate), or None when it is."""
    if depth > MAX_JSON_DEPTH:
        return f"{where} is nested deeper than {MAX_JSON_DEPTH} levels"
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                return f"{where} has the key {shown(name)}: a JSON object's keys are strings"
            if problem := json_problem(item, f"{where}.{name}", depth + 1):
                return problem
        return None
    if isinstance(value, list):
        return next((p for k, item in enumerate(value) if (p := json_problem(item, f"{where}[{k}]", depth + 1))), None)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} is {value}, which JSON cannot say"
    if isinstance(value, str) and (found := SURROGATE.search(value)):
        return f"{where} holds the character {found.group()!a}, which UTF-8 cannot say"
    if value is None or isinstance(value, str | int | float):
        return None
    return f"{where} must be JSON: a string, number, boolean, null, list or mapping (got {kind(value)})"


# -- the shipped jobs ------------------------------------------------------------------------------


def shipped_jobs() -> list[str]:
    """The names of the jobs that ship with crashlab, sorted."""
    folder = resources.files(SHIPPED)
    return sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml"))


def is_path(spec: str) -> bool:
    """`--job SPEC` names a file when it is one, has a slash or a YAML suffix; else a shipped job."""
    return (os.path.exists(spec) and not os.path.isdir(spec)) or "/" in spec or spec.endswith((".yaml", ".yml"))


def find_job(spec: str) -> Job:
    """The job `--job SPEC` names: a file, or a shipped job by name (whose source is that name)."""
    if is_path(spec):
        return load_job(spec)
    names = shipped_jobs()
    if spec not in names:
        raise JobError(f"no job file or shipped job {shown(spec)} (shipped: {', '.join(names)}; a path needs a '/' "
                       "or .yaml)")
    with resources.as_file(resources.files(SHIPPED) / f"{spec}.yaml") as path:
        return load_job(path, source=spec)
