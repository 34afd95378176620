"""A life against the service: the loop a real process, the world a real service, every death the harness's.

A loop whose tools call crashlab's service (`crashlab.service`) can die at its own crash points
and at the service's: ``accepted``, right after the service commits a request, before the loop
hears the answer. Neither process knows the other's points, so here the harness counts them all
and decides every death. The loop's process tells each event down a socket as it happens, and at
each of its points waits for the harness's word; the service does the same down its control line
and waits before it answers. When the count reaches the point chosen, the harness SIGKILLs the
loop's process and only then lets the service go on: its answer goes nowhere, as a real answer to
a dead client does.

The events arrive in the order they happened: the loop tells its events before it makes the request
that makes the service tell one, so before the harness takes a service event it takes whatever the
loop has already told.

A program (`Program`) tells nothing; with `Variant.fs_points` its run directory sits on the file-system
layer (`crashlab.durable.fuse`), which tells every ``fsync``, ``fdatasync``, ``rename``, ``unlink`` and
close after a write as it comes, and holds it for the harness's word as the service holds a request.
Each is named by what it is and the path it acts on (``fsync:checkpoints.sqlite-wal``; the third in a
process, ``#3``, as every label is counted), so a story reads in the program's own terms.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

from crashlab.durable.store import FileStore
from crashlab.errors import BadInput, HarnessError
from crashlab.lifeline import dies_with
from crashlab.protocols.death import Choice, Left, NoSuchChoice
from crashlab.protocols.fault import PageCache, Serving
from crashlab.protocols.points import Crash, Event, Recorder, Where, recording
from crashlab.protocols.run import Program, Run
from crashlab.protocols.runner import TIME_LIMIT
from crashlab.protocols.scenario import Setup
from crashlab.runners import syncs
from crashlab.runners.confined import check_inside, confine, told
from crashlab.runners.group import Boundary, Child, Hung, Outlived, entered
from crashlab.runners.output import Output, flush
from crashlab.runners.turns import turns
from crashlab.scratch import remove, scratch
from crashlab.service import control
from crashlab.service.process import ServiceProcess
from crashlab.service.store import SERVICE_FILE, Dump, dump, load
from crashlab.service.yours import YourService, state_of
from crashlab.world import World, WorldState
from crashlab.world.remote import served_records

#: The run directory, for a loop that keeps files of its own: in the environment of each of its processes.
RUN_DIR = "CRASHLAB_RUN_DIR"


class TellingRecorder(Recorder):
    """The recorder of one process of a served loop: it tells every event to the harness as it happens,
    and at each crash point waits for the harness, which kills the process there or lets it go on.

    A loop's threads may pass points at once (an unscheduled loop's do), so one thread at a time has the
    line, for a whole point: its frame out and the harness's word back. Without the lock two threads' frames
    interleaved, and one thread read another's word, half of it: the harness saw a frame of 2 GB."""

    def __init__(self, line: socket.socket, scenario: str, process: int):
        super().__init__((), scenario, process)
        self.line = line
        self.lock = threading.Lock()

    def hit(self, label: str) -> None:
        with self.lock:
            self.passed += 1
            control.send(self.line, {"kind": "point", "label": label, "where": _where(self.where)})
            control.receive(self.line)  # the harness's word: go on (a death never answers)

    def note(self, kind: str, label: str = "", **detail: Any) -> None:
        with self.lock:
            control.send(self.line, {"kind": kind, "label": label, "where": _where(self.where), "detail": detail})


def _where(where: Where) -> list[Any]:
    return [where.turn, where.call, where.tool]


def live_served(setup: Setup, points: Recorder, directory: Path, service: ServiceProcess, dies: bool = False,
                landing: Landing | None = None, limit: float = TIME_LIMIT,
                stopped: Callable[[], None] | None = None, fs: socket.socket | None = None,
                cache: PageCache | None = None) -> bool:
    """Fork the process `points.process` of the scenario against `service`; True if it returned, False if
    it died at its crash point. Its events, and the service's while it ran, go into `points` in order.

    With `dies`, a death at one of the service's own points takes the service too: it never hears the
    harness's word, and the caller kills it where it waits. A `landing` lands the request a dead
    process left on the wire as this one passes its point. The process is in a cgroup of its own and
    leads a process group (`Boundary`), which every kill takes whole, and which is killed when it ends;
    `LoopFailed`, hung, past `limit` seconds.
    With `stopped`, at each point it passes alive, the harness stops the group, as a death would take it,
    runs `stopped()`, and lets it go on. What it prints is kept apart (`crashlab.runners.output`), noted in `points`.
    With `fs`, the line of the file-system layer under `directory`, a program's file operations are points too.
    With `cache`, the page cache under `directory` a power cut may cut: each point says how many states a cut
    there would leave, and the process's ``sync`` and ``syncfs`` reach it (`crashlab.runners.syncs`)."""
    assert service.control is not None, "a sweep's service has a control line"
    ours, theirs = socket.socketpair()
    hears, catches = socket.socketpair() if cache is not None else (None, None)
    parent = os.getpid()
    boundary = Boundary.new()
    output = Output()
    pid = os.fork()
    if pid == 0:  # the child: it never returns from here
        status = 1
        try:
            boundary.enter()
            dies_with(parent, signal.SIGKILL)
            ours.close()
            service.control.close()
            if fs is not None:
                fs.close()
            output.redirect()
            if setup.variant.on_its_word:  # its word that it keeps all in its run directory: it may write nowhere else
                confine(directory, entered())
            if hears is not None and catches is not None:
                hears.close()
                syncs.catch(catches)
            if isinstance(setup.variant.entry, Program):
                status = _exec(setup.variant.entry, directory, theirs, service.env())
            else:
                _child(setup, points.scenario, points.process - 1, directory, theirs, service.env())
                status = 0
        finally:
            flush()
            os._exit(status)
    theirs.close()
    output.opened()
    child = Child(pid, limit, boundary)
    ended = os.pidfd_open(pid) if isinstance(setup.variant.entry, Program) else None
    caught = None
    if hears is not None and catches is not None and cache is not None:
        catches.close()
        caught = syncs.Syncs.heard(hears, cache.sync, directory)
    try:
        try:
            return _watch(points, child, ours, service.control, dies, landing, stopped, output, ended, fs,
                          cache.states if cache is not None else None)
        finally:
            end(child, fs)
            if caught is not None:
                caught.close()
            ours.close()
            if ended is not None:
                os.close(ended)
            output.drain()
            output.close()
            output.noted(points)
    except Hung as hung:
        raise LoopFailed(f"{points.scenario}: process {points.process}", str(hung)) from None
    except Outlived as outlived:
        raise outlived.named(points.scenario, points.process) from None


def _watch(points: Recorder, child: Child, loop: socket.socket, service: socket.socket, dies: bool,
           landing: Landing | None, stopped: Callable[[], None] | None, output: Output,
           ended: int | None = None, fs: socket.socket | None = None,
           states: Callable[[], int] | None = None) -> bool:
    """Take every event of the loop and the service until the loop's process ends, and kill it where told; what it
    prints, as it comes. With `states`, each point says how many states a power cut there would leave: the loop
    stands still there, and the service waits.

    A `Program` tells nothing: its line carries at most why it could not start, and its end is its exit, seen
    on `ended` (a pidfd of its process). Its points are the service's, and the file-system layer's (`fs`).

    A point of the layer's is an operation the program's process stands in, in the kernel, until the layer
    answers: no signal stops it there, so a copy of what a death would leave is taken as it stands, and a
    death kills it first and then fails the operation (`GONE`), for only then can it die."""
    where = Where()
    target = points.crash_at[points.process - 1] if points.process <= len(points.crash_at) else 0
    scenario = f"{points.scenario}: process {points.process}"

    def take(message: dict[str, Any], answer: socket.socket | None) -> bool:
        """One event into `points`; at the chosen point, the kill. True while the loop lives."""
        nonlocal where
        if "where" in message:
            where = Where(*message["where"])
        kind, label = str(message.get("kind", "")), str(message.get("label", ""))
        if kind == "off-script":  # the program asked the model what its job does not say: no scenario to count
            end(child, fs)
            raise OffScript(f"{scenario}: the program's conversation left its job's script: "
                            f"{dict(message.get('detail') or {}).get('why', '')}")
        if kind != "point":
            points.events.append(Event(points.process, kind, label, where, 0, dict(message.get("detail") or {})))
        crash_point = label if kind == "point" else message.get("point")
        held = fs if fs is not None and answer is fs else None  # the layer's, held in the process's system call
        if crash_point:
            points.passed += 1
            detail: dict[str, Any] = {"service": True} if answer is service else {"fs": True} if held else {}
            if states is not None:
                detail["states"] = states()
            points.events.append(Event(points.process, "point", str(crash_point), where, points.passed, detail))
            if points.passed == target:
                if held is not None:  # killed where it stands, in the operation, which then fails to nobody
                    child.kill()
                    control.send(held, control.GONE)
                end(child, fs)  # and only then may the service answer it
                points.events.append(Event(points.process, "crash", str(crash_point), where, points.passed))
                points.dead = Crash(str(crash_point), points.passed)
            elif stopped is not None and held is not None:  # it stands in its operation, which the layer holds
                stopped()
            elif stopped is not None:  # where a death would be, the loop stands still, and the service waits
                child.pause()
                try:
                    stopped()
                finally:
                    child.resume()
            if landing is not None:
                landing.reached(points, where)
        if answer is not None and held is None and (points.dead is None or (answer is service and not dies)):
            # A loop that died here hears nothing: a request it sent stays on the wire, one it had in hand goes on
            # to nobody, and passes no later point of the service's that a restart would be charged with.
            word = control.GO if points.dead is None else control.HOLD if crash_point == "sent" else control.GONE
            control.send(answer, word)
        elif held is not None and points.dead is None:
            control.send(held, control.GO)
        return points.dead is None

    def from_loop() -> bool | None:
        """The loop's next frame taken; how its life ended, once it has, else None."""
        message = _receive(loop, scenario, child)
        kind = message.get("kind")
        if kind == "end" or not take(message, loop if kind == "point" else None):
            return _ended(message, points, child, scenario)
        return None

    if ended is not None:
        return _watch_program(points, child, loop, service, ended, take, scenario, output, fs)
    while True:
        ready = child.ready([loop.fileno(), service.fileno(), *output.fds])
        for printed in set(ready) & set(output.fds):
            output.take(printed)
        if service.fileno() in ready:
            while select.select([loop], [], [], 0)[0]:  # what the loop told before it made the request
                if (ended := from_loop()) is not None:
                    return ended
            if not take(_frame(service, child), service):
                return _ended({}, points, child, scenario)
        elif loop.fileno() in ready and (ended := from_loop()) is not None:
            return ended


def end(child: Child, fs: socket.socket | None = None) -> None:
    """Kill the process and reap it. With `fs`, the line of the file-system layer under its run directory, every
    operation the layer tells meanwhile is answered: gone. A process ends only once each of its threads has left the
    kernel, and a thread in an operation the layer holds leaves it only on the layer's answer, which waits for the
    harness's word: a program of more than one thread can have one told just as another dies (at the service's
    point, say), and without that word the harness and the layer waited on each other."""
    if fs is None or child.status is not None:  # reaped already: none of its threads is left to hold
        child.end()
        return
    ended, ends = socket.socketpair()

    def answer() -> None:
        with suppress(control.LineBroken, OSError):
            while fs in select.select([fs, ended], [], [])[0]:
                control.receive(fs, child.until())
                control.send(fs, control.GONE)

    answering = threading.Thread(target=answer, name="crashlab-layer-gone", daemon=True)
    answering.start()
    try:
        child.end()
    finally:
        ends.close()  # which wakes it
        answering.join()
        ended.close()


def _frame(line: socket.socket, child: Child) -> dict[str, Any]:
    """The next frame on `line`, which the harness found ready while `child` runs: `Hung` if it does not come whole in
    the child's time (the harness waits for no line without bound)."""
    try:
        return control.receive(line, child.until())
    except TimeoutError:
        raise child.hung("waiting on a frame half sent, it ran") from None


def _receive(loop: socket.socket, scenario: str, child: Child) -> dict[str, Any]:
    try:
        return _frame(loop, child)
    except control.LineBroken:
        status = child.reap()
        raise HarnessError(f"{scenario} ended (wait status {status}) without a word: killed by something "
                           "else?") from None


def _watch_program(points: Recorder, child: Child, loop: socket.socket, service: socket.socket, ended: int,
                   take: Callable[[dict[str, Any], socket.socket | None], bool], scenario: str,
                   output: Output, fs: socket.socket | None = None) -> bool:
    """A program's life: the service's events, and the file-system layer's (`fs`), until the program exits (`ended`,
    its pidfd, is readable), and what it prints as it comes. Its line closes as it starts (exec closes it), or
    carries why it could not start."""
    why = ""
    watched = [loop.fileno(), service.fileno(), ended, *([fs.fileno()] if fs is not None else [])]
    while True:
        ready = child.ready([*watched, *output.fds])
        for printed in set(ready) & set(output.fds):
            output.take(printed)
        if fs is not None and fs.fileno() in ready:
            if not take(_frame(fs, child), fs):
                return _ended({}, points, child, scenario)
        elif service.fileno() in ready:
            if not take(_frame(service, child), service):
                return _ended({}, points, child, scenario)
        elif loop.fileno() in ready:
            if loop.recv(1, socket.MSG_PEEK):
                why = str(_frame(loop, child).get("ended", ""))
            watched.remove(loop.fileno())  # closed by its exec, or said all it will
        elif ended in ready:
            code = os.waitstatus_to_exitcode(child.reap())
            if why:
                raise LoopFailed(scenario, why)
            return _ended({"ended": "returned" if code == 0 else f"exited with status {code}"}, points, child,
                          scenario)


def _exec(program: Program, directory: Path, line: socket.socket, env: Mapping[str, str]) -> int:
    """Become the program, in its run directory, told where crashlab's servers are; if it cannot start, say why
    on `line` and return the status a shell gives a command it cannot run."""
    try:
        os.chdir(directory)
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.execvpe(program.argv[0], program.argv, {**os.environ, **env, RUN_DIR: str(directory)})
    except OSError as error:
        control.send(line, {"kind": "end", "ended": f"cannot start {program}: {error.strerror or error}"})
    return 127


class OffScript(BadInput):
    """A program that asked crashlab's model what its job does not say: its job, or its tools, are not the ones
    the sweep was given."""


class LoopFailed(HarnessError):
    """A process of the loop ended with an error: a restart that cannot go on in the world its deaths left
    is stuck, which a sweep counts; a loop that fails by itself is broken, which fails the sweep."""

    def __init__(self, scenario: str, why: str):
        super().__init__(f"{scenario} failed: {why}")
        self.scenario, self.why = scenario, why

    def __reduce__(self) -> tuple[type[LoopFailed], tuple[str, str]]:
        return LoopFailed, (self.scenario, self.why)  # it crosses from a worker process whole


class RefusedByContract(LoopFailed):
    """A loop's first process failed just after the receiver's idempotency contract refused its request with the
    contract's own error code (ACP's ``idempotency_key_required``): the loop cannot run under that contract at all.

    For a single sweep it fails as any `LoopFailed` does, with the same line; a sweep under several contracts
    (`crashlab sweep --profile`) shows it as that profile's row instead, for the contract's refusal is the finding,
    and the other rows still stand. `refusal` says what the contract refused, in one line."""

    def __init__(self, scenario: str, why: str, variant: str, profile: str, refusal: str):
        super().__init__(scenario, why)
        self.variant, self.profile, self.refusal = variant, profile, refusal

    def __reduce__(self) -> tuple[type[LoopFailed], tuple[str, ...]]:  # type: ignore[override]
        return RefusedByContract, (self.scenario, self.why, self.variant, self.profile, self.refusal)


#: The events crashlab's service reports as it answers a request, one for each (`crashlab.service.tracker`).
ANSWERED = frozenset({"request", "refused", "lookup", "ask", "approval", "model", "task", "no-reply"})


def refused_by(failed: LoopFailed, setup: Setup, points: Recorder) -> LoopFailed:
    """`failed`, the failure of a first process from nothing, as a `RefusedByContract` if the last request the
    service answered in it was refused, with a 4xx, by its contract's own rules (``"contract"`` in the refusal's
    detail: a key required, too long for the profile, reused for another payload, in flight). What the loop did
    after, short of another request (its framework saving the error, as LangGraph's checkpointer does), is its
    way of failing. A refusal the loop went on from, or a 4xx of no contract's (a comment on no issue, a
    malformed body), leaves it a failure of the loop's."""
    answers = [e for e in points.events if e.process == points.process and e.kind in ANSWERED]
    last = answers[-1] if answers else None
    if last is None or last.kind != "refused" or not last.detail.get("contract"):
        return failed
    status, code = last.detail.get("status"), last.detail.get("code")
    if not (isinstance(status, int) and 400 <= status < 500):
        return failed
    return RefusedByContract(failed.scenario, failed.why, setup.variant.slug, setup.profile,
                             f"{last.label}: {status} {code}" if code else f"{status}: {last.detail.get('why', '')}")


def _ended(message: dict[str, Any], points: Recorder, child: Child, scenario: str) -> bool:
    if points.dead is not None:
        return False
    status = child.reap()
    ended = message.get("ended")
    if ended == "returned" and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return True
    if ended:
        check_inside(scenario, str(ended))
        raise LoopFailed(scenario, str(ended))
    raise HarnessError(f"{scenario} failed: wait status {status}")


def _child(setup: Setup, scenario: str, process: int, directory: Path, line: socket.socket,
           env: Mapping[str, str]) -> None:
    """One process of the scenario: the loop, told where its service and its directory are."""
    os.environ.update(env)
    os.environ[RUN_DIR] = str(directory)
    os.chdir(directory)  # a file the loop names by a relative path is its run's, not one of the user's
    points = TellingRecorder(line, scenario, process)
    points.start_process()
    try:
        with recording(points), turns(setup, points):
            store = FileStore(directory, points, sync="none")
            world = World.new(setup.job, points, setup.variant.tracker)
            setup.variant.entry(Run(setup.job, world, store, directory, points.process, points))
        control.send(line, {"kind": "end", "ended": "returned"})
    except SystemExit as exit_:  # a loop that ends with sys.exit(0) has returned, as a program that exits 0
        control.send(line, {"kind": "end", "ended": "returned" if exit_.code in (0, None) else ended_by(exit_)})
    except BaseException as error:
        control.send(line, {"kind": "end", "ended": ended_by(error)})


def ended_by(error: BaseException) -> str:
    """An error as one line, with the innermost line it came from."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return told(error, f"{type(error).__name__}: {error} ({Path(frame.filename).name}:{frame.lineno})")


def served_world(setup: Setup, state: Mapping[str, Any]) -> WorldState:
    """What the service holds, as the world's state: each record tagged with the effect it is."""
    records = served_records(state["records"], setup.variant.recognised(setup.job))
    return WorldState(tuple(records), (), (), (), state["asks"], state["approvals"], (), (),
                      state["model_calls"], ())


@dataclass
class Landing:
    """Where the request a dead process left on the wire lands: as its restart passes its point `at`, or,
    one past its last, after its end. The service holds it until then."""

    at: int
    service: ServiceProcess
    landed: bool = False

    def reached(self, points: Recorder, where: Where) -> None:
        if not self.landed and points.passed == self.at:
            self.land(points, where)

    def after_end(self, points: Recorder) -> None:
        if self.landed:
            return
        if self.at != points.passed + 1:
            raise NoSuchChoice(f"{points.scenario}: the restart passes {points.passed} crash points, so a late "
                               f"request lands at one of them or after the last (~1 to ~{points.passed + 1})")
        self.land(points, Where())

    def land(self, points: Recorder, where: Where) -> None:
        said = self.service.land()
        self.landed = True
        points.events.append(Event(points.process, "late", str(said.pop("label")), where, 0, said))


@dataclass(frozen=True)
class Landings:
    """The states a death at the service's ``sent`` leaves: the request lands at the restart's point k, from 1
    on, as far as the restart goes. A plain value, so a branch can grow in another process."""

    left: Left

    def __iter__(self) -> Iterator[Left]:
        for k in count(1):
            yield self.left.then(f"the request the dead process sent was on the wire: it lands as the restart passes "
                                 f"its point {k}, or after the restart's end", k, at_point=k)


class Outside:
    """The world outside a served loop in one scenario: crashlab's service, run as the faults serve it, or
    a service of yours standing in for it. It lives each process of the loop against it, and says what
    it holds and what a death leaves of it."""

    def __init__(self, setup: Setup, services: Services, choices: tuple[Choice, ...]):
        self.setup, self.services, self.choices = setup, services, choices
        self.stand: YourService | None = setup.variant.stands_in
        self.serving = setup.faults.serving(setup.profile)
        #: The job whose model the service plays, at /v1, for a program that asks it (a job with calls).
        self.plays = setup.job.source if setup.plays_model else None
        self.service = None if self.stand is not None else \
            services.reset(setup.variant.tracker, self.serving, self.plays)
        if self.stand is not None:
            self.stand.reset()

    @classmethod
    def of(cls, setup: Setup, services: Services, choices: tuple[Choice, ...]) -> Outside | None:
        variant = setup.variant
        return cls(setup, services, choices) if variant.calls_service or variant.stands_in is not None else None

    def live(self, points: Recorder, directory: Path, plain: Callable[..., bool], limit: float,
             stopped: Callable[[], None] | None = None, fs: socket.socket | None = None,
             cache: PageCache | None = None) -> bool:
        """One process of the loop, as `live_served` lives it, or, against a service of yours, as `plain` does
        (at the loop's own points only); `LoopFailed` if it ended with an error. With `stopped`, `fs` and `cache`, as
        `live_served` says."""
        if self.stand is not None:
            return plain(self.setup, points, directory, self.stand.env())
        assert self.service is not None
        landing = None
        if points.process > 1:  # a restart: after a while, with a request of the dead process on the wire
            choice = self.choices[points.process - 2] if points.process - 1 <= len(self.choices) else ()
            if self.serving.downtimes:  # the choice is one the death allows (`chosen` saw to it)
                self.service.advance(self.serving.downtimes[choice[0] - 1])
            if self.serving.late:
                landing = Landing(choice[-1] if choice else 0, self.service)
        returned = live_served(self.setup, points, directory, self.service, self.serving.dies, landing, limit, stopped,
                               fs, cache)
        if returned and landing is not None:
            landing.after_end(points)
        if not returned and self.serving.dies:  # the service dies with the loop, and starts again
            self.service.kill()
            self.service = self.services.restart(self.setup.variant.tracker, self.serving, self.plays)
        return returned

    def cut(self, choice: Choice) -> int | None:
        """Which of the states its page cache admits a death whose state is `choice` leaves: its power cut's part."""
        return choice[1 if self.serving.downtimes else 0] if self.serving.cuts and choice else None

    @property
    def database(self) -> Path:
        """The service's file: read for a snapshot, written to restore one."""
        return self.services.places[(self.setup.variant.tracker, self.serving, self.plays)] / SERVICE_FILE

    def dump(self) -> Dump:
        """What the service has committed, row by row."""
        return dump(self.database)

    def load(self, dumped: Dump) -> None:
        """The service, reset, made to hold `dumped`: where a restart from a snapshot finds it."""
        load(self.database, dumped)

    def state(self) -> WorldState:
        if self.stand is not None:
            return served_world(self.setup, state_of(self.stand))
        assert self.service is not None
        return served_world(self.setup, self.service.state())

    def left(self, point: Event) -> list[Iterable[Left]]:
        """The states a death at `point` leaves: the crash's; or one per downtime before the restart; under a power
        cut, one per state the run directory's page cache admitted there (`point` says how many); and, under late
        delivery, one per point of the restart where the request on the wire lands (none where none is). Their choices
        come in the order of the faults' slugs, as a scenario ID names them."""
        groups: list[Iterable[Left]] = [(Left(None),)]
        if self.serving.downtimes:
            groups = [tuple(Left(None, f"it starts {hours:g} h after the death", (s,))
                            for s, hours in enumerate(self.serving.downtimes, start=1))]
        if self.serving.cuts:
            states = int(point.detail.get("states", 1))
            groups = [tuple(left.then(cut_state(s, states), s) for left in group for s in range(1, states + 1))
                      for group in groups]
        if self.serving.late:
            if not (point.label == "sent" and point.detail.get("service")):
                return []  # nothing on the wire: a death here is no scenario of late delivery
            groups = [Landings(left) for group in groups for left in group]
        return groups


def cut_state(state: int, states: int) -> str:
    """The `state`-th of the `states` states a power cut admits, as people read it."""
    if state == states:
        return "the power cut left in the run directory only what its syncs made durable"
    if state == 1:
        return "the power cut left the run directory as its page cache held it: every operation had reached the disk"
    return (f"the power cut left the run directory with its newest operations lost, and no synced one (state {state} "
            f"of {states}, each losing more than the one before)")


class Services:
    """The service processes of one runner, one per way of serving, started when a served loop first needs one.

    Each scenario starts over an empty service (`reset`), as each starts over an empty world file;
    under a fault whose service dies with the loop, each death kills it and `restart` brings up a
    new process over the same database.
    """

    def __init__(self) -> None:
        self.running: dict[tuple[str, Serving, str | None], ServiceProcess] = {}
        self.places: dict[tuple[str, Serving, str | None], Path] = {}
        self.root = scratch("service")

    def reset(self, tracker: str, serving: Serving, plays: str | None = None) -> ServiceProcess:
        service = self.running.get((tracker, serving, plays)) or self.restart(tracker, serving, plays)
        service.reset()
        return service

    def restart(self, tracker: str, serving: Serving, plays: str | None = None) -> ServiceProcess:
        """A service process over the database of this way of serving: the first, or one after a death; with
        `plays`, a job whose model it plays too."""
        way = (tracker, serving, plays)
        if way not in self.places:
            self.places[way] = Path(tempfile.mkdtemp(dir=self.root))
        self.running[way] = ServiceProcess.start(self.places[way], tracker=tracker, commit=serving.commit,
                                                 steps=serving.steps, wrong_at=serving.wrong_at,
                                                 no_reply=serving.no_reply, late=serving.late, job=plays,
                                                 model_ids=serving.model_ids, profile=serving.profile,
                                                 failed_after=serving.failed_after)
        return self.running[way]

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc: object) -> None:
        # Killed, not stopped: their databases are scratch, and a stop waits out uvicorn's shutdown, 0.3 s each.
        for service in self.running.values():
            service.kill()
        remove(self.root)


