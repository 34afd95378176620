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


# Host and Origin, on every route: a web page's request, cross-site or by DNS rebinding, changes nothing.

EVERY_ROUTE = [
    ("POST", "/issues", b'{"title": "t"}'), ("POST", "/issues/1/comments", b'{"body": "b"}'),
    ("GET", "/search?q=t", b""), ("GET", "/idempotency/k1", b""), ("POST", "/person/questions", b'{"title": "t"}'),
    ("POST", "/person/approvals", b'{"action": "a"}'), ("POST", "/model/calls", b"{}"), ("POST", "/mcp", b"{}"),
    ("POST", "/_crashlab/reset", b"{}"), ("GET", "/_crashlab/state", b""), ("POST", "/_crashlab/clock", b"{}"),
    ("POST", "/_crashlab/land", b"{}"), ("GET", "/no/such/route", b""),
]
FOREIGN_HOSTS = ["attacker.example", "attacker.example:{port}", "127.0.0.1.attacker.example:{port}",
                 "localhost.attacker.example", "attacker.example@127.0.0.1:{port}", "10.1.2.3:{port}", "0.0.0.0:{port}",
                 "[::ffff:127.0.0.1]:{port}", "127.0.0.1:{port}/x", ""]


def port_of(service: ServiceProcess) -> int:
    return int(service.url.rsplit(":", 1)[1])


def one_record(service: ServiceProcess) -> None:
    answer = httpx.post(service.url + "/issues", json={"title": "Login fails"}, trust_env=False)
    assert answer.status_code == 201


def test_a_cross_site_post_with_a_foreign_host_changes_nothing(service):
    """What a web page sent to a developer's machine: answered 200, and every record, key and count was gone."""
    one_record(service)
    for path in ("/_crashlab/reset", "/issues"):
        answer = httpx.post(service.url + path, content=b'{"title": "Pwned"}', trust_env=False,
                            headers={"Host": "attacker.example", "Origin": "http://attacker.example",
                                     "Content-Type": "text/plain"})
        assert answer.status_code == 421 and "not this service's" in answer.json()["error"], path
    assert [r["title"] for r in service.state()["records"]] == ["Login fails"]


@pytest.mark.parametrize(("method", "path", "body"), EVERY_ROUTE, ids=[f"{m} {p}" for m, p, _ in EVERY_ROUTE])
def test_every_route_refuses_a_host_that_is_not_loopback_or_the_services_own_address(service, method, path, body):
    one_record(service)
    for host in FOREIGN_HOSTS:
        answer = httpx.request(method, service.url + path, content=body, trust_env=False,
                               headers={"Host": host.format(port=port_of(service)), "Content-Type": "application/json"})
        assert answer.status_code == 421, (host, answer.text)
        error = answer.json()["error"]
        assert "\n" not in error and len(error) < 400
    assert [r["title"] for r in service.state()["records"]] == ["Login fails"]


@pytest.mark.parametrize("origin", ["http://attacker.example", "null", "http://127.0.0.1.attacker.example",
                                    "https://attacker.example:443", "http://10.1.2.3:{port}", "file://"])
def test_a_page_of_another_origin_is_refused_though_it_names_a_loopback_host(service, origin):
    answer = httpx.post(service.url + "/issues", json={"title": "Pwned"}, trust_env=False,
                        headers={"Origin": origin.format(port=port_of(service))})
    assert answer.status_code == 403 and "origin" in answer.json()["error"]
    assert service.state()["records"] == []


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:{port}", "localhost:{port}", "127.0.0.1", "127.0.0.1:8080",
                                  "127.1.2.3:{port}", "[::1]:{port}"])
def test_a_loopback_host_at_any_port_and_a_loopback_origin_are_let_in(service, host):
    """A loopback name is this machine whatever the port: a tunnel's, or a proxy's on another port."""
    headers = {"Host": host.format(port=port_of(service)), "Origin": f"http://{host.format(port=port_of(service))}"}
    answer = httpx.post(service.url + "/issues", json={"title": "Login fails"}, trust_env=False, headers=headers)
    assert answer.status_code == 201


# Only JSON: a form's POST, or a fetch a page may send without asking first, never reaches a handler.

BODIES = [("POST", "/issues"), ("POST", "/person/questions"), ("POST", "/model/calls"), ("POST", "/mcp"),
          ("POST", "/_crashlab/clock")]


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          "application/json-seq", None])
@pytest.mark.parametrize(("method", "path"), BODIES, ids=[p for _, p in BODIES])
def test_a_body_not_sent_as_json_is_415_and_changes_nothing(service, method, path, content_type):
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = httpx.request(method, service.url + path, content=b'{"title": "Pwned"}', headers=headers,
                           trust_env=False)
    assert answer.status_code == 415 and "application/json" in answer.json()["error"]
    assert service.state()["records"] == [] and service.state()["model_calls"] == 0


def test_json_with_a_charset_is_json_and_a_post_with_no_body_needs_no_type(service):
    answer = httpx.post(service.url + "/issues", content=b'{"title": "t"}', trust_env=False,
                        headers={"Content-Type": "Application/JSON; charset=utf-8"})
    assert answer.status_code == 201
    assert httpx.post(service.url + "/model/calls", trust_env=False).json() == {"calls": 1}


# The harness's controls: behind the token the service printed as it started, which no page can know.

CONTROLS = [("POST", "/_crashlab/reset", b"{}"), ("GET", "/_crashlab/state", b""),
            ("POST", "/_crashlab/clock", b'{"advance_hours": 30}'), ("POST", "/_crashlab/land", b"{}"),
            ("GET", "/_crashlab/no-such-control", b"")]


@pytest.mark.parametrize(("method", "path", "body"), CONTROLS, ids=[f"{m} {p}" for m, p, _ in CONTROLS])
def test_a_control_without_the_services_token_is_401_and_changes_nothing(service, method, path, body):
    one_record(service)
    httpx.post(service.url + "/issues", json={"title": "Export is slow"}, headers={"Idempotency-Key": "k1"},
               trust_env=False)
    for said in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": f"Basic {service.token}"},
                 {"Authorization": f"Bearer {service.token[:-1]}"}, {"X-Crashlab-Token": "Bearer " + service.token},
                 {"Authorization": f"Bearer {service.token}é".encode()}):
        answer = httpx.request(method, service.url + path, content=body, trust_env=False,
                               headers={"Content-Type": "application/json", **said})
        assert answer.status_code == 401, (said, answer.text)
        assert "token" in answer.json()["error"] and answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert [r["title"] for r in service.state()["records"]] == ["Login fails", "Export is slow"]
    replayed = httpx.post(service.url + "/issues", json={"title": "Export is slow"}, headers={"Idempotency-Key": "k1"},
                          trust_env=False)
    assert replayed.headers["Idempotent-Replayed"] == "true", "the key was kept: the clock did not move 30 hours"


def test_the_token_opens_the_controls_and_the_tools_need_none(service):
    one_record(service)
    state = httpx.get(service.url + "/_crashlab/state", headers={"Authorization": f"bearer {service.token}"},
                      trust_env=False)
    assert [r["title"] for r in state.json()["records"]] == ["Login fails"]
    assert len(service.token) >= 40, "secrets.token_urlsafe(32): 256 bits"


def test_a_sweeps_loop_is_told_where_the_service_is_not_its_token(service):
    assert service.token not in repr(service.env())


def test_crashlab_serve_prints_its_url_first_and_the_token_that_opens_its_controls(tmp_path):
    command = [sys.executable, "-m", "crashlab", "serve", "--dir", str(tmp_path / "svc")]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as serve:
        assert serve.stdout is not None
        url = serve.stdout.readline().strip()
        serve.terminate()
        said = serve.stdout.read()  # not communicate(): it would miss what readline() has buffered
        assert serve.wait(30) == 0
    token = said.split("Authorization: Bearer ", 1)[-1].split("'")[0]
    assert url.startswith("http://127.0.0.1:") and len(token) >= 40 and f"CRASHLAB_SERVICE_TOKEN={token}" in said


# Beyond this machine only when asked: --expose.


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_serve_on_an_address_beyond_loopback_without_expose_is_refused_in_one_line(tmp_path, host):
    code, out, err = serve("--dir", str(tmp_path / "svc"), "--host", host)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert f"--host {host} is not a loopback address" in err and "--expose" in err
    assert not (tmp_path / "svc").exists()


def test_with_expose_serve_says_what_it_exposes_and_its_doors_still_hold(tmp_path):
    command = [sys.executable, "-m", "crashlab", "serve", "--dir", str(tmp_path / "svc"), "--host", "0.0.0.0",
               "--expose"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as exposed:
        assert exposed.stdout is not None
        url = exposed.stdout.readline().strip()
        port = url.rsplit(":", 1)[1]
        local = f"http://127.0.0.1:{port}/issues"
        by_ip = httpx.post(local, json={"title": "t"}, headers={"Host": f"10.1.2.3:{port}"}, trust_env=False)
        by_name = httpx.post(local, json={"title": "t"}, headers={"Host": f"attacker.example:{port}"}, trust_env=False)
        exposed.terminate()
        said = exposed.stdout.read()
        assert exposed.wait(30) == 0
    assert url == f"http://0.0.0.0:{port}"
    (line,) = [line for line in said.splitlines() if "exposed" in line]
    assert f"0.0.0.0:{port}" in line and "anyone who can reach it" in line and "token" in line
    assert (by_ip.status_code, by_name.status_code) == (201, 421), "an IP of its own is let in, a name is not"
