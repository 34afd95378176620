"""Run the service: take its directory, bind its socket, say its URL, serve under uvicorn until told to stop.

The socket is bound here, not by uvicorn, so port 0 means any free port and the URL can be known
and announced: the first line on stdout is exactly the base URL, the second the token its controls
need, made anew at each start, and the harness that started the process, the only one to read its
stdout, reads them to find and drive the service. Anything else goes to stderr.

It stops, cleanly and with status 0, on SIGTERM or SIGINT, and when the harness's control line
closes: a harness that died must not leave a service behind. A line that carried garbage stops it
with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import ipaddress
import math
import os
import re
import secrets
import signal
import socket
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import cast

import uvicorn

from crashlab.errors import BadInput
from crashlab.job import find_job
from crashlab.profiles import DEFAULT, find
from crashlab.service.app import build_app
from crashlab.service.doors import Bound
from crashlab.service.line import Line
from crashlab.service.model import Model
from crashlab.service.script import MODEL_IDS, Script
from crashlab.service.store import COMMITS, SERVICE_FILE, Store, check_file
from crashlab.service.tracker import KEY_RULES, KeyRule, Service
from crashlab.world.tracker import TRACKER_MODES, TrackerMode

#: Held while a service runs on a directory: two services on one file would each think their
#: in-flight keys the only ones.
LOCK_FILE = "service.lock"
#: How long a stopping service lets requests in progress finish, in seconds.
GRACE = 2


@dataclass(frozen=True)
class Settings:
    """What `python -m crashlab.service` and `crashlab serve` take."""

    directory: Path
    host: str = "127.0.0.1"
    port: int = 0
    tracker: str = "keyed"
    keys: str = "optional"
    retention: float | None = None  # hours; None: the profile's
    control_fd: int | None = None
    commit: str = "one-txn"
    steps: bool = False
    wrong_at: int = 0
    no_reply: str = ""  # "K-applied" or "K-lost": the changing request whose reply does not come in time
    late: bool = False  # a changing request passes the crash point sent, where a death leaves it on the wire
    expose: bool = False  # it may listen beyond this machine's loopback
    job: str | None = None  # the job whose model it plays at /v1: a file, or a shipped job's name
    model_ids: str = "stable"  # "drifting": a reply given again names its calls anew
    profile: str = DEFAULT  # the idempotency contract a keyed tracker keeps
    failed_after: int = 0  # the changing request (from 1) that commits its record and then answers 500

    def script(self) -> Script | None:
        """The model the service plays, if it plays one; `BadInput` in one line if its job cannot be played."""
        return None if self.job is None else Script(find_job(self.job), self.model_ids)

    def no_reply_at(self) -> tuple[int, bool] | None:
        """`no_reply` as the service takes it: the request's number, and whether it was applied."""
        if not self.no_reply:
            return None
        at, _, way = self.no_reply.partition("-")
        return int(at), way == "applied"

    def check(self) -> None:
        """Refuse, in one line, what cannot be served."""
        if self.directory.exists() and not self.directory.is_dir():
            raise BadInput(f"--dir {self.directory} is a file, not a directory")
        if not self.directory.exists() and not self.directory.parent.is_dir():
            raise BadInput(f"--dir {self.directory}: its parent {self.directory.parent} is not a directory")
        if not 0 <= self.port <= 65535:
            raise BadInput(f"--port {self.port} is not a port (0 to 65535; 0 takes any free one)")
        if self.tracker not in TRACKER_MODES:
            raise BadInput(f"unknown tracker {self.tracker!r} (valid: {', '.join(TRACKER_MODES)})")
        if self.keys not in KEY_RULES:
            raise BadInput(f"unknown --keys {self.keys!r} (valid: {', '.join(KEY_RULES)})")
        if self.no_reply and not re.fullmatch(r"[1-9][0-9]{0,8}-(applied|lost)", self.no_reply):
            raise BadInput(f"--no-reply {self.no_reply!r}: K-applied or K-lost, K counted from 1")
        if self.wrong_at < 0:
            raise BadInput(f"--wrong-at {self.wrong_at}: the question answered wrong is counted from 1 (0: none)")
        if self.commit not in COMMITS:
            raise BadInput(f"unknown --commit {self.commit!r} (valid: {', '.join(COMMITS)})")
        if self.retention is not None and not (math.isfinite(self.retention) and self.retention >= 0):
            raise BadInput(f"--retention {self.retention} is not a number of hours (0 or more)")
        find(self.profile)
        if self.failed_after < 0:
            raise BadInput(f"--failed-after-effect {self.failed_after}: the changing request that fails is counted "
                           "from 1 (0: none)")
        if self.late and self.control_fd is None:
            raise BadInput("--late needs --control-fd: only the harness on the control line knows a client died")
        if self.control_fd is not None:
            try:
                mode = os.fstat(self.control_fd).st_mode
            except OSError:
                raise BadInput(f"--control-fd {self.control_fd} is not an open file descriptor") from None
            if not stat.S_ISSOCK(mode):
                raise BadInput(f"--control-fd {self.control_fd} is not a socket")


class Server(uvicorn.Server):
    """uvicorn's server, announcing itself once it listens, and taking a signal as an order to stop.

    uvicorn raises a signal it caught again once it has shut down, so the process dies of it; the
    service was asked to stop, did, and exits 0.
    """

    def __init__(self, config: uvicorn.Config, announce: Callable[[], None]):
        super().__init__(config)
        self.announce = announce
        self.exit_code = 0

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.announce()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: stop waiting for requests in progress
        self.should_exit = True


@dataclass(frozen=True)
class Started:
    """What a service that listens announces: where, its controls' token, what it is, and what it exposes."""

    url: str
    token: str
    service: Service
    model: Model
    exposed: str | None  # one line, if it listens beyond this machine's loopback


def listen(host: str, port: int, expose: bool) -> socket.socket:
    """A socket bound to `host`:`port` (0: any free port), for uvicorn to listen on; beyond loopback only if
    `expose`: the tools need no token, so whoever reaches the service may file issues and search them."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as error:
        raise BadInput(f"cannot listen on {host}:{port} ({error.strerror or error})") from None
    if not expose and not ipaddress.ip_address(address[0]).is_loopback:
        raise BadInput(f"--host {host} is not a loopback address: whoever reaches {address[0]} could file issues and "
                       "search them; add --expose to serve beyond this machine")
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as error:
        sock.close()
        raise BadInput(f"cannot listen on {host}:{port} ({error.strerror or error})") from None
    return sock


def exposure(bound: Bound) -> str | None:
    """What a service listening at `bound` opens beyond this machine, in one line; None on loopback."""
    address = ipaddress.ip_address(bound.address)
    if address.is_loopback:
        return None
    every = ", every address of this machine" if address.is_unspecified else ""
    return (f"exposed on {bound.where}{every}: anyone who can reach it may file issues and comments, search them, "
            "look up keys, ask the person and count model calls, over HTTP and MCP; its controls still need the token")


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if sock.family == socket.AF_INET6 else f"http://{host}:{port}"


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold `directory` for one service; a second is refused rather than left to share the file."""
    try:
        lock = open(directory / LOCK_FILE, "a")  # noqa: SIM115 (closed below, after the service)
    except OSError as error:
        raise BadInput(f"--dir {directory}: cannot write in it ({error.strerror or error})") from None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BadInput(f"--dir {directory} is in use by another service") from None
        yield


def serve(settings: Settings, announce: Callable[[Started], None]) -> int:
    """Serve until stopped; the exit status. `announce` is told where and what the service is once it listens.

    Whatever can be refused is refused before anything is made: the port is bound and the file
    looked at first, so a busy port or another program's file leaves no directory, lock or table.
    """
    settings.check()
    script = settings.script()
    check_file(settings.directory / SERVICE_FILE)
    with listen(settings.host, settings.port, settings.expose) as sock:
        try:
            settings.directory.mkdir(exist_ok=True)
        except OSError as error:
            raise BadInput(f"--dir {settings.directory}: cannot make it ({error.strerror or error})") from None
        with locked(settings.directory):
            store = Store(settings.directory / SERVICE_FILE)
            try:
                return run(settings, store, sock, announce, script)
            finally:
                store.close()


def run(settings: Settings, store: Store, sock: socket.socket, announce: Callable[[Started], None],
        script: Script | None = None) -> int:
    server: Server | None = None

    def closed(why: str, broke: bool) -> None:
        print(f"crashlab service: {why}: stopping", file=sys.stderr, flush=True)
        assert server is not None
        server.exit_code = 1 if broke else 0
        server.should_exit = True

    line = None if settings.control_fd is None else Line(settings.control_fd, closed)
    service = Service(store, cast(TrackerMode, settings.tracker), cast(KeyRule, settings.keys), settings.retention,
                      line, settings.commit, settings.steps, wrong_at=settings.wrong_at,
                      no_reply=settings.no_reply_at(), late=settings.late, profile=find(settings.profile),
                      failed_after=settings.failed_after)
    bound = Bound(*sock.getsockname()[:2])
    token = secrets.token_urlsafe(32)  # the harness's controls' key: only who reads the announcement knows it
    model = Model(service, script)
    config = uvicorn.Config(build_app(service, bound, token, model), log_config=None, log_level="warning",
                            access_log=False, lifespan="on", timeout_graceful_shutdown=GRACE)
    url = base_url(sock)
    server = Server(config, lambda: announce(Started(url, token, service, model, exposure(bound))))
    asyncio.run(server.serve(sockets=[sock]))
    return server.exit_code if server.started else 1


def say_url(started: Started) -> None:
    """The first line on stdout is the URL and nothing else, the second the controls' token; what the service
    is goes to stderr. Only the harness that started the service reads its stdout."""
    print(started.url, started.token, sep="\n", flush=True)
    print(f"crashlab service: {started.service.describe()}", file=sys.stderr, flush=True)
    if started.model.script is not None:
        print(f"crashlab service: {started.model.describe()}", file=sys.stderr, flush=True)
    if started.exposed:
        print(f"crashlab service: {started.exposed}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crashlab.service",
                                     description="crashlab's issue tracker as an HTTP service over SQLite.")
    parser.add_argument("--dir", required=True, type=Path, help="the service's directory: service.sqlite")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--expose", action="store_true", help="let --host be an address beyond loopback")
    parser.add_argument("--port", type=int, default=0, help="0 (the default): any free port")
    parser.add_argument("--tracker", choices=TRACKER_MODES, default="keyed")
    parser.add_argument("--keys", choices=KEY_RULES, default="optional")
    parser.add_argument("--profile", default=DEFAULT, metavar="NAME",
                        help="the idempotency contract a keyed tracker keeps (crashlab profiles lists them)")
    parser.add_argument("--retention", type=float, metavar="HOURS", help="how long a key is kept (default: the "
                        "profile's)")
    parser.add_argument("--control-fd", type=int, metavar="N", help="the harness's end of the control line")
    parser.add_argument("--commit", choices=COMMITS, default="one-txn",
                        help="how a request is made durable: record and key in one transaction, then the answer "
                             "(one-txn); the record, then the key (two-step); the answer, then the write (ack-first)")
    parser.add_argument("--commit-points", action="store_true",
                        help="pass the crash points applied and record-committed between a commit's steps")
    parser.add_argument("--wrong-at", type=int, default=0, metavar="K",
                        help="the person answers the K-th 'did it happen?' question wrong (0, the default: none)")
    parser.add_argument("--no-reply", default="", metavar="K-applied|K-lost",
                        help="the K-th changing request gets no reply in time (504): applied, or never arrived")
    parser.add_argument("--failed-after-effect", type=int, default=0, metavar="K",
                        help="the K-th changing request commits its record and then answers 500; what its key keeps "
                             "is the profile's")
    parser.add_argument("--late", action="store_true",
                        help="a changing request passes the crash point sent as it arrives; a client that dies "
                             "there leaves it on the wire, until POST /_crashlab/land (needs --control-fd)")
    parser.add_argument("--job", metavar="JOB", help="play this job's model at /v1 (OpenAI's Chat Completions and "
                        "Responses, Anthropic's Messages): a job file, or a shipped job's name")
    parser.add_argument("--model-ids", choices=MODEL_IDS, default="stable",
                        help="a reply given again names its tool calls as before (stable) or anew (drifting)")
    args = parser.parse_args(argv)
    settings = Settings(args.dir, args.host, args.port, args.tracker, args.keys, args.retention, args.control_fd,
                        args.commit, args.commit_points, args.wrong_at, args.no_reply, args.late, args.expose,
                        args.job, args.model_ids, args.profile, args.failed_after_effect)
    try:
        return serve(settings, say_url)
    except BadInput as error:
        print(f"crashlab service: error: {' '.join(str(error).split())}", file=sys.stderr)
        return error.exit_code
