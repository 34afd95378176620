"""Hostile surroundings of a sweep: every surface refuses, in one line, what it cannot vouch for.

A scheduler that is not one, a sweep too big to finish, a signal, a full disk, a closed pipe, an
--out on another file system, effects the API cannot count: each is refused or handled before it
costs a traceback, a hang or the whole sweep. Whatever might hang runs as a real process with a
timeout, so a regression fails its test instead of the test run.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from .test_hostile_input import assert_refused, run

# -- --scheduler: anything but a Dask scheduler is refused within the connect timeout --------------


def answer(kind: str, connection: socket.socket) -> None:
    """What a server that is no Dask scheduler does with a connection: nothing, HTTP, garbage, or echo it."""
    if kind == "garbage":
        connection.sendall(bytes(range(256)) * 4)
    while kind != "silent" and (data := connection.recv(65536)):
        connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" if kind == "http" else data)


def serve(kind: str, server: socket.socket) -> None:
    held = []  # a silent server holds its connections open
    while True:
        try:
            connection, _ = server.accept()
        except OSError:
            return
        held.append(connection)
        threading.Thread(target=answer, args=(kind, connection), daemon=True).start()


@pytest.fixture
def impostor(request) -> Iterator[str]:
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=serve, args=(request.param, server), daemon=True).start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.mark.parametrize(
    ("impostor", "message"),
    [("silent", "accepts connections but gave no Dask answer within 5 s"),
     ("http", "answered, but not as a Dask scheduler"),
     ("garbage", "answered, but not as a Dask scheduler"),
     ("echo", "answered, but not as a Dask scheduler")],
    indirect=["impostor"],
)
def test_a_scheduler_that_is_no_dask_scheduler_is_refused_within_the_timeout(impostor, message):
    pytest.importorskip("distributed")
    code, out, err, _ = run("sweep", "--variant", "keys", "--job", "read-only", "--scheduler", impostor, timeout=60)
    assert_refused(code, out, err, f"'{impostor}'", message)


@pytest.mark.parametrize("impostor", ["silent"], indirect=True)
def test_a_campaign_sent_to_a_silent_listener_is_refused_too(impostor):
    pytest.importorskip("distributed")
    code, out, err, _ = run("campaign", "--jobs", "2", "--scheduler", impostor, timeout=60)
    assert_refused(code, out, err, f"'{impostor}' accepts connections but gave no Dask answer")


@pytest.mark.parametrize(
    ("address", "message"),
    [("tcp://127.0.0.1:9", "cannot reach the Dask scheduler 'tcp://127.0.0.1:9': Connection refused"),
     ("127.0.0.1:8786", "a Dask scheduler's address is tcp://HOST:PORT"),
     ("tcp://127.0.0.1:99999", "a Dask scheduler's address is tcp://HOST:PORT"),
     ("tcp://host:port", "a Dask scheduler's address is tcp://HOST:PORT")],
)
def test_a_scheduler_address_that_is_none_is_named(address, message):
    pytest.importorskip("distributed")
    code, out, err, _ = run("sweep", "--variant", "keys", "--job", "read-only", "--scheduler", address, timeout=60)
    assert_refused(code, out, err, message)


