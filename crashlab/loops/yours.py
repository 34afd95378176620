"""Your loop, as crashlab runs it: from a file or a module, with the effects it means to have.

``path/to/my_loop.py:entry`` imports the file with its folder importable, so it can import its
sibling modules, as pytest arranges for a test file; ``package.module:entry`` imports a module. The
entry point is ``entry(run)``, or ``entry()`` for a loop that finds its service (``CRASHLAB_TRACKER_URL``)
and its directory (``CRASHLAB_RUN_DIR``) in the environment and imports nothing of crashlab's.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, cast

import yaml

from crashlab.errors import BadInput
from crashlab.job import Job, Turn, shown
from crashlab.protocols.run import Entry, Program, Run
from crashlab.protocols.scenario import Setup
from crashlab.protocols.variant import Variant
from crashlab.service.yours import YourService
from crashlab.world import TRACKER_MODES, TrackerMode
from crashlab.world.effects import Effect, effects_of

#: What `--loop` takes for a loop of yours: a file or a module, a colon, and the entry points' names.
SPEC = re.compile(r"(?P<where>[^:]+):(?P<attrs>[A-Za-z_][A-Za-z0-9_]*(?:,[A-Za-z_][A-Za-z0-9_]*)*)")


def is_yours(spec: str) -> bool:
    return ":" in spec


def load(spec: str) -> tuple[str, list[tuple[str, Entry]]]:
    """The entry points `spec` names (``FILE.py:plain,keyed``), each with the slug its scenarios are named
    by (its name, dashed), and the name of the job they run (the file's or module's, dashed)."""
    match = SPEC.fullmatch(spec)
    if match is None:
        raise BadInput(f"--loop {shown(spec)}: a loop of yours is FILE.py:ENTRY or MODULE:ENTRY (ENTRY,ENTRY... "
                       "for several), e.g. examples/http_loop.py:plain,keyed")
    where, attrs = match["where"], match["attrs"].split(",")
    module = _import(where)
    entries = []
    for k, attr in enumerate(attrs):
        entry = getattr(module, attr, None)
        if not callable(entry):
            found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                           and getattr(v, "__module__", None) == module.__name__)
            raise BadInput(f"--loop {spec}: {where} has no function {attr!r} (its functions: "
                           f"{', '.join(found) or 'none'})")
        if attr in attrs[:k]:
            raise BadInput(f"--loop {spec}: {attr} is named twice")
        entries.append((slug(attr), entry))
    stem = Path(where).stem if where.endswith(".py") else where.rpartition(".")[2]
    return slug(stem), entries


#: `--command NAME=COMMAND`: the name its scenarios go by, if given, before an ``=``.
NAMED = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_-]*)=(?P<command>.*)", re.S)
#: The files a program's name is taken from, where no name is given: its script's (``python agent.py``: agent).
SCRIPTS = (".py", ".mjs", ".js", ".cjs", ".ts", ".sh", ".rb")


def program(command: str) -> tuple[str, Program]:
    """The program `--command` names (``python agent.py``, or ``plain=python agent.py``), with the name its
    scenarios go by: the one given, else its script's stem, else its program's. Each process of a scenario runs
    in its own run directory, so an argument that names a file where crashlab was started is made absolute."""
    named = NAMED.fullmatch(command.strip())
    text = named["command"] if named else command
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise BadInput(f"--command {shown(command)}: {error} (quote it as a shell would)") from None
    if not argv:
        raise BadInput("--command names no program: give the command that runs your agent, e.g. "
                       "--command 'python agent.py'")
    argv = [os.path.abspath(arg) if ("/" in arg or k > 0) and Path(arg).is_file() else arg  # a venv's link kept
            for k, arg in enumerate(argv)]
    if shutil.which(argv[0]) is None:
        raise BadInput(f"--command {shown(command)}: no program {argv[0]!r} here (not a file, nor on PATH)")
    script = next((arg for arg in reversed(argv) if Path(arg).suffix in SCRIPTS), argv[0])
    name = named["name"] if named else Path(script).stem
    return slug(name), Program(tuple(argv))


def slug(name: str) -> str:
    """A loop's name as its scenario IDs start with it: lowercase, dashes for underscores (``plain_loop``:
    ``plain-loop``), on the command line and in the API alike."""
    return name.lower().replace("_", "-")


def takes_run(entry: Callable[..., object]) -> bool:
    """Whether a loop's entry point wants the `Run` (``entry(run)``) or nothing (``entry()``): a loop that
    finds its service and its directory in the environment need not import crashlab at all."""
    try:
        parameters = inspect.signature(entry).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def _bare(entry: Callable[[], object], run: Run) -> object:
    return entry()


def _import(where: str) -> Any:
    """The module `where` names, imported; whatever its import raises (a `sys.exit(main())` at its end, a
    `SystemExit` that would end crashlab with its code and no word) is refused in one line. Only Ctrl-C goes on."""
    path = Path(where)
    if where.endswith(".py") or "/" in where:
        if path.suffix != ".py":
            raise BadInput(f"--loop: {shown(where)} is not a Python file: a loop of yours is FILE.py:ENTRY or "
                           "MODULE:ENTRY")
        if not path.is_file():
            raise BadInput(f"--loop: no file {shown(where)}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = path.stem
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise BadInput(f"--loop: {shown(where)} cannot be imported as a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # so a pool's worker can unpickle the entry point by its module
        try:
            spec.loader.exec_module(module)
        except KeyboardInterrupt:
            sys.modules.pop(name, None)
            raise
        except BaseException as error:
            sys.modules.pop(name, None)
            raise BadInput(f"--loop: importing {where} failed: {failure(error)}") from None
        return module
    try:
        return importlib.import_module(where)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        raise BadInput(f"--loop: importing {where} failed: {failure(error)}") from None


def failure(error: BaseException) -> str:
    """What an import raised, as one line; a `SystemExit` with what to do instead."""
    if isinstance(error, SystemExit):
        return (f"it called sys.exit({error.code!r}) as it was imported (call your main only under "
                "if __name__ == '__main__':)")
    return f"{type(error).__name__}: {error}"


def read_effects(path: str) -> tuple[Effect, ...]:
    """`--effects FILE`: the effects, by what they are, from a YAML mapping."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise BadInput(f"--effects {shown(path)}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise BadInput(f"--effects {shown(path)}: not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise BadInput(f"--effects {shown(path)}: not YAML{at}") from None
    return effects_of(data, where=path)


def setup(entry: Entry, effects: Iterable[str] | Mapping[str, Any] | Iterable[Effect], *, name: str = "loop",
          tracker: TrackerMode = "keyed", job: str | Job | None = None, service: YourService | None = None,
          scheduled: bool = False, state_in_run_dir: bool = False, fs_points: bool = False) -> Setup:
    """Your loop as crashlab runs it: a variant of its own, on a job of no turns (your loop is its own script), or,
    for a program that asks crashlab's model, on `job`, the `Job` whose model the service plays.

    `effects` are what it means to do, once each: the effects by what they are (a mapping, as the
    YAML file has it, or `Effect` values), for a loop whose tools call crashlab's service (or
    `service`, one of yours in its place); or the names its tools give `run.tracker`, for a loop
    that tags its requests itself. `scheduled`: it runs tool calls on a `ThreadPoolExecutor`, whose threads
    the harness makes take turns in an order it decides and can replay (`crashlab.protocols.schedule`).
    `state_in_run_dir`: it keeps all it keeps in its run directory (and crashlab's service), so a sweep may restart
    it from copies of what each death left, each distinct state once; on its word, which each sweep checks first
    (`crashlab.engine.copies`). `fs_points`: a program's file operations in its run directory are crash points too.
    """
    if fs_points and not isinstance(entry, Program):
        raise BadInput("fs_points are a program's (--command): a loop of yours marks its own points with "
                       "crashlab.point(label)")
    if not callable(entry):  # else found only in the forked child, as its first process fails
        raise BadInput(f"the loop's entry is a function, entry(run) or entry(), not {shown(repr(entry))} (a "
                       f"{type(entry).__name__})")
    if isinstance(effects, str):
        raise BadInput(f"effects is a list of effect names or a mapping of what each is, not the string {effects!r}")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9-]*", name := slug(name)):
        raise BadInput(f"name {shown(name)}: a scenario ID starts with it, so it must be a letter, then letters, "
                       "digits, dashes or underscores (plain_loop is plain-loop)")
    if tracker not in TRACKER_MODES:
        raise BadInput(f"unknown tracker {shown(tracker)} (valid: {', '.join(TRACKER_MODES)})")
    served: tuple[Effect, ...] = ()
    given: tuple[object, ...] = ()
    if isinstance(effects, Mapping):
        served = effects_of(effects)
    else:
        given = tuple(effects)
        if given and all(isinstance(e, Effect) for e in given):
            served = tuple(e for e in given if isinstance(e, Effect))
        elif not given or not all(isinstance(e, str) and e for e in given):
            raise BadInput("effects names what your loop means to do, once each: a non-empty list of effect names, "
                           "or a mapping of each effect to what it is ({A: {issue: TITLE}, C: {comment: A}})")
    names = tuple(e.name for e in served) if served else tuple(str(e) for e in given)
    if twice := sorted({n for k, n in enumerate(names) if n in names[:k]}):
        raise BadInput(f"effects names {', '.join(twice)} twice: each effect is made once, so name each once (an "
                       "effect made twice is a duplicate the sweep counts)")
    entry = entry if takes_run(entry) else partial(_bare, cast(Callable[[], object], entry))
    if service is not None:
        if not isinstance(service, YourService):
            raise BadInput(f"service: {type(service).__name__} lacks env(), reset() or records(): see "
                           "crashlab.service.yours.YourService")
        if not served:
            raise BadInput("a service of yours holds records, not effect names: give the effects by what they are "
                           "({A: {issue: TITLE}, C: {comment: A}})")
        if state_in_run_dir:
            raise BadInput("a service of yours keeps its records where crashlab cannot copy them, so a restart cannot "
                           "start from a copy of what a death left: sweep it without --state-in-run-dir")
    variant = Variant(name, name, name, entry, tracker=tracker, table="loop", runners=frozenset({"forked"}),
                      keeps_checkpoint=False, kept_in_directory=state_in_run_dir, on_its_word=state_in_run_dir,
                      effects=names, service=served, stands_in=service, scheduled=scheduled, fs_points=fs_points)
    if isinstance(job, Job):
        return Setup(variant, job)
    job = job or name
    return Setup(variant, Job(job, f"{job}-run-1", (Turn(answer="done"),), source=job))
