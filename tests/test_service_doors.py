"""The service's doors, tried as an attacker would (issue 39): what reaches it, and what it leaves behind.

A web page can reach a developer's loopback service by a cross-site request or by DNS rebinding;
a client can hang up mid-body, send a key no two decoders read alike, or point the service at a
file it does not own. Each test here is one such case: it is refused, or survived, and nothing
changes.
"""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from crashlab.service.process import ServiceProcess
from crashlab.service.store import SERVICE_FILE


@pytest.fixture(scope="module")
def running(tmp_path_factory) -> Iterator[ServiceProcess]:
    with ServiceProcess.start(tmp_path_factory.mktemp("doors"), control=False) as service:
        yield service


@pytest.fixture
def service(running) -> ServiceProcess:
    running.reset()
    return running


def lines(text: str) -> int:
    return len(text.splitlines())


@pytest.mark.parametrize("path", ["/issues", "/mcp", "/_crashlab/clock"])
def test_a_client_that_hangs_up_mid_body_is_one_line_on_stderr_and_the_service_goes_on(service, path):
    host, port = service.url.removeprefix("http://").split(":")
    before = lines(service.stderr())
    for _ in range(20):
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n".encode()
                         + b'{"title": "Login')
    deadline = time.monotonic() + 10
    while lines(service.stderr()) < before + 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    written = service.stderr().splitlines()[before:]
    assert len(written) == 20 and "Traceback" not in service.stderr(), written[:5]
    assert all("hung up" in line for line in written), written[0]
    assert httpx.post(service.url + "/issues", json={"title": "t"}, trust_env=False).json() == {"number": 1}
    assert [r["title"] for r in service.state()["records"]] == ["t"], "nothing of the hung-up requests was applied"


# The Idempotency-Key: the draft's structured-field string, printable ASCII, one per request.

NOT_PRINTABLE_ASCII = ["clé", "k\t1", "k\x7f", "日本"]


@pytest.mark.parametrize("key", NOT_PRINTABLE_ASCII, ids=ascii)
def test_a_key_header_beyond_printable_ascii_is_400_and_changes_nothing(service, key):
    answer = httpx.post(service.url + "/issues", json={"title": "Login fails"}, trust_env=False,
                        headers={"Idempotency-Key": key.encode()})
    assert answer.status_code == 400 and "printable ASCII" in answer.json()["error"]
    assert service.state()["records"] == []


@pytest.mark.parametrize("key", NOT_PRINTABLE_ASCII, ids=ascii)
def test_a_lookup_of_a_key_beyond_printable_ascii_is_400_not_a_404_that_says_it_never_landed(service, key):
    answer = httpx.get(service.url + "/idempotency/" + quote(key, safe=""), trust_env=False)
    assert answer.status_code == 400 and "printable ASCII" in answer.json()["error"]


def test_two_key_headers_are_400_and_change_nothing(service):
    answer = httpx.post(service.url + "/issues", json={"title": "Login fails"}, trust_env=False,
                        headers=[("Idempotency-Key", "k1"), ("Idempotency-Key", "k2")])
    assert answer.status_code == 400 and "two Idempotency-Key headers" in answer.json()["error"]
    assert service.state()["records"] == []


# A refusal changes nothing: not the file it refuses, not the directory it would have served.


def serve(*args: str) -> tuple[int, str, str]:
    """`crashlab serve` in a process of its own, which one that serves rather than refuses cannot hang."""
    try:
        done = subprocess.run([sys.executable, "-m", "crashlab", "serve", *args], capture_output=True, text=True,
                              timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"crashlab serve {' '.join(args)} served: it was to refuse")
    return done.returncode, done.stdout, done.stderr


def foreign_tables(path: Path) -> None:
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        connection.commit()


def foreign_records(path: Path) -> None:
    """A table named as the service's, of another program's making: the file the issue saw changed."""
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, what TEXT)")
        connection.commit()


def not_sqlite(path: Path) -> None:
    path.write_text("kept by another program\n" * 100)


@pytest.mark.parametrize("make", [foreign_tables, foreign_records, not_sqlite])
def test_serve_refuses_a_foreign_file_in_one_line_without_writing_a_byte_of_it(tmp_path, make):
    make(tmp_path / SERVICE_FILE)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    code, out, err = serve("--dir", str(tmp_path))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert f"{tmp_path / SERVICE_FILE}: not a crashlab service database" in err
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before, "no table, no WAL, no lock file"


def test_serve_on_a_busy_port_is_refused_in_one_line_and_makes_no_directory(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        code, out, err = serve( "--dir", str(tmp_path / "svc"), "--port", str(busy.getsockname()[1]))
    assert (code, out) == (2, "") and err.count("\n") == 1 and "cannot listen on 127.0.0.1:" in err
    assert not (tmp_path / "svc").exists()
