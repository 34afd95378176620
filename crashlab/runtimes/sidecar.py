"""A runtime's server, outside the processes a sweep kills.

Some runtimes keep what they know in a server, not in the process that runs the loop: Temporal a
workflow's history, in its dev server; Prefect its flow runs and their states, in its API server.
A real deployment's server outlives a worker's death, so the one here must too. The first process
that needs it starts it, in a session of its own and out of the process's cgroup, so that the kill
of the loop's process group and cgroup spares it, declared (`OUTLIVES`) so that the harness does
not report it as a survivor, and records its address in the server's directory, where every later
process finds it.

Nothing else stops it, so a watchdog does: the runtime's server module, run as a program, starts
the server and ends it once the server's directory is gone, or the harness is (the process that
forked the loop's and waits for it: a sweep's, or `crashlab run`'s), or the server dies.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from crashlab.lifeline import OUTLIVES, outlives
from crashlab.scratch import shared

#: How often the watchdog looks for the server's directory: seconds (a wait on the harness, not a busy loop).
WATCH = 0.5

#: What starts a runtime's server: given its directory, its port and the log it writes to.
Start = Callable[[Path, int, IO[bytes]], "subprocess.Popen[bytes]"]


def address(directory: Path, module: str, name: str, patience: float = 30) -> str:
    """The address of the server that `module` (run with ``python -m``) keeps over `directory`: the running one,
    or one started now, waited for up to `patience` seconds."""
    recorded = directory / f"{name}.address"
    if recorded.exists():
        host, port = recorded.read_text().split(":")
        if _listening(host, int(port)):
            return f"{host}:{port}"
    free = _free_port()
    harness = os.pidfd_open(os.getppid())  # alive: it waits for this process
    try:
        server = subprocess.Popen([sys.executable, "-m", module, str(directory), str(free), str(harness)],
                                  start_new_session=True, env={**os.environ, OUTLIVES: "1"}, pass_fds=(harness,),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        outlives(server.pid)
    finally:
        os.close(harness)
    deadline = time.monotonic() + patience
    while not _listening("127.0.0.1", free):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the {name} server did not listen on {free} within {patience:g} s: "
                               f"see {directory / f'{name}.log'}")
        time.sleep(0.05)
    recorded.write_text(f"127.0.0.1:{free}")
    return f"127.0.0.1:{free}"


def _listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.2).close()
    except OSError:
        return False
    return True


#: Where the kernel's ephemeral ports begin when it does not say (Linux's default).
EPHEMERAL = 32768
#: The lowest port a server is given here: above the well-known and most registered ones.
LOWEST = 10000


def _free_port() -> int:
    """A port free now, below the kernel's ephemeral range. The server binds it a second or more later (an
    interpreter, then the server's own start), and in between any bind to port 0 (a crashlab service's, Dask's,
    another test's) could take a port freed from that range: the loop would then find an HTTP/1 server where it
    looks for Temporal's, and fail on the mismatch (seen in CI: ``h2 protocol error ... FRAME_SIZE_ERROR``)."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = EPHEMERAL
    for port in random.sample(range(LOWEST, first), min(100, max(0, first - LOWEST))):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # the ephemeral range is nearly every port, or those below it are taken
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def watch(start: Start, name: str, remove: bool = False) -> None:
    """The watchdog, as the program `address` starts (``DIRECTORY PORT HARNESS``, the last a pidfd): run the
    server until its directory or the harness is gone, then stop it, and remove the directory if asked (when it
    is the server's own, not a run's)."""
    directory, port, harness = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    os.chdir("/")  # hold no directory of the run open
    if remove:  # the server's own, a scratch directory: held while the server runs (`crashlab.scratch`)
        shared(directory)
    with open(directory / f"{name}.log", "ab") as log:
        server = start(directory, port, log)
    try:
        while server.poll() is None and directory.is_dir() and not select.select([harness], [], [], WATCH)[0]:
            pass
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
        (directory / f"{name}.address").unlink(missing_ok=True)  # its port may go to another server
        if remove:
            shutil.rmtree(directory, ignore_errors=True)
