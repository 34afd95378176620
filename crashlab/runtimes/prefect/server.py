"""Prefect's API server, one per harness, outside the processes a sweep kills (`crashlab.runtimes.sidecar`).

With no API URL set, Prefect 3 runs in ephemeral mode: a process's first client starts a temporary
API server (a uvicorn subprocess, `SubprocessASGIServer` in ``prefect/server/api/server.py``) that
dies with the process. That costs each process the server's start, 7 s on an idle two-core machine
and over 20 s on a busy one, so a sweep of the triage job took hours. A deployment instead has one
server that its flow processes come and go against, and a killed flow process leaves its flow run
there, `Running`, for a retry to take up. So here: one server for all the processes one harness
forks (a sweep's worker, or `explain`), started the way Prefect starts its ephemeral one (the same
command and settings), by the first process that needs it, over a SQLite database in a directory of
its own, which the watchdog removes with the server once the harness is gone. Each scenario's flow
run is its own: `loop` names it for its run directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import IO

from crashlab import scratch
from crashlab.runtimes import sidecar

NAME = "prefect"
#: Seconds a process waits for the server to listen: it migrates a new database first (7 s idle, 25 s busy).
PATIENCE = 120


def api_url() -> str:
    """The API of the harness's server: the running one, or one started now."""
    # Named and held as `crashlab.scratch` names and holds scratch directories: by each process that uses the server
    # and by its watchdog, so a new sweep removes it only once all are gone (its harness killed before the watchdog
    # could remove it).
    directory = scratch.place() / f"crashlab-prefect-pid{os.getppid()}-server"
    scratch.shared(directory)
    return f"http://{sidecar.address(directory, __name__, NAME, PATIENCE)}/api"


def start(directory: Path, port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """`SubprocessASGIServer._run_uvicorn_command`, over a database in `directory`."""
    spec = find_spec("prefect")  # not imported: the watchdog needs only where it is
    assert spec is not None and spec.origin is not None, "the prefect extra is installed"
    settings = {"PREFECT_HOME": str(directory / "home"),
                "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{directory / 'prefect.db'}",
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    return subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir", str(Path(spec.origin).parent.parent),
                             "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
                             "--port", str(port), "--log-level", "error", "--lifespan", "on"],
                            env={**os.environ, **settings}, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


if __name__ == "__main__":
    sidecar.watch(start, NAME, remove=True)
