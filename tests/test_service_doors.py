"""The service's doors, tried as an attacker would (issue 39): what reaches it, and what it leaves behind.

A web page can reach a developer's loopback service by a cross-site request or by DNS rebinding;
a client can hang up mid-body, send a key no two decoders read alike, or point the service at a
file it does not own. Each test here is one such case: it is refused, or survived, and nothing
changes.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from crashlab.service.process import ServiceProcess


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
