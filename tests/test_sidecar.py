"""A runtime's server outlives the loop's processes, as a deployment's does, and not the harness that forked them:
every process a harness forks finds the one server, a kill of a process's whole group spares it, and once the
harness is gone the server stops and its directory goes (`crashlab.runtimes.sidecar`; Temporal's dev server and
Prefect's API server are two of them)."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crashlab.runtimes import sidecar

#: A toy server: Python's own HTTP server, kept by the sidecar's watchdog.
SERVER = """
import subprocess, sys
from crashlab.runtimes import sidecar

def start(directory, port, log):
    return subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                            stdout=log, stderr=log)

if __name__ == "__main__":
    sidecar.watch(start, "toy", remove=True)
"""

#: A harness: forks two processes in turn, each in a group of its own. The first finds the server (starting it)
#: and SIGKILLs its whole group, as a sweep kills a loop; the second finds it again. Then the harness ends.
HARNESS = """
import os, signal, sys
from pathlib import Path
from crashlab.runtimes import sidecar

for last in (False, True):
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        print(sidecar.address(Path(sys.argv[1]), "toy_server", "toy"), flush=True)
        os._exit(0) if last else os.killpg(0, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


def listening(address: str) -> bool:
    host, port = address.split(":")
    try:
        socket.create_connection((host, int(port)), timeout=0.2).close()
    except OSError:
        return False
    return True


def test_one_server_outlives_each_killed_process_of_a_harness_and_ends_with_the_harness(tmp_path, monkeypatch):
    (tmp_path / "toy_server.py").write_text(SERVER)
    directory = tmp_path / "server"
    directory.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    done = subprocess.run([sys.executable, "-c", HARNESS, str(directory)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.split()
    assert first == second  # the killed group took the process, not its server
    deadline = time.monotonic() + 10
    while (listening(first) or directory.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not listening(first) and not directory.exists()


@pytest.mark.skipif(not Path("/proc/sys/net/ipv4/ip_local_port_range").exists(), reason="Linux's ephemeral range")
def test_a_servers_port_is_free_and_below_the_ports_a_bind_to_port_0_can_take():
    """The server binds its port a second or more after it is chosen: a port from the ephemeral range could be
    taken in between by any service that binds port 0, and the loop would talk to that service instead."""
    first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = sidecar._free_port()
        assert sidecar.LOWEST <= port < first
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))
