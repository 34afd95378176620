"""A recording proxy: the model's three routes passed on to a real provider, each exchange kept.

`crashlab record` points a program's SDK at this proxy through the variables the SDKs read
(``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``), as a sweep points it at the job's model. Each request
goes on to the upstream as it came, its key and all, and the upstream's answer comes back to the
program as it was sent, streamed or not. On the way, a request to a model's route is read as the
script reads one (the conversation it holds, `crashlab.service.script.Asked`), and its reply as the
SDK's own types read it (`Heard`: the tool calls and the text), so that the run can be written as a
job. What goes wrong on the way (an upstream that cannot be reached, answers an error, or answers
what is no reply of its wire) is kept as one line each, for the command to say the first.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from crashlab.service.model import ROUTES
from crashlab.service.script import Asked, Heard, Malformed

#: How long the upstream may take over one reply, in seconds: a model's long answer, streamed, takes a while.
UPSTREAM_TIMEOUT = 300.0
#: Headers that belong to one hop of HTTP, not to the request: the proxy makes its own.
HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "accept-encoding",
                 "proxy-connection", "te", "upgrade"})


@dataclass(frozen=True)
class Exchange:
    """One model call the program made: the wire it spoke, the conversation it sent, the reply it heard."""

    api: str
    asked: Asked
    heard: Heard


def readers(api: str) -> tuple[Callable[[dict[str, Any]], Asked], Callable[[bytes, bool], Heard]]:
    """How `api`'s requests and replies are read, imported now (the SDKs' types are the `model` extra)."""
    if api == "messages":
        from crashlab.service import anthropic_wire

        return anthropic_wire.messages_asked, anthropic_wire.messages_heard
    from crashlab.service import openai_wire

    if api == "chat":
        return openai_wire.chat_asked, openai_wire.chat_heard
    return openai_wire.responses_asked, openai_wire.responses_heard


class Recording:
    """The proxy to `upstream` (a provider's base URL, with or without its ``/v1``), serving on 127.0.0.1 while
    the block runs: `exchanges` in the order their replies came, `problems` in the order they happened."""

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.exchanges: list[Exchange] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="crashlab-recording", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Recording:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def problem(self, said: str) -> None:
        with self.lock:
            self.problems.append(said)

    def forward(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> tuple[int, str, bytes]:
        """The upstream's answer to the request: its status, its content type and its bytes, read whole."""
        request = urllib.request.Request(self.upstream + path, body, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT) as answer:
                return answer.status, answer.headers.get("Content-Type", "application/json"), answer.read()
        except urllib.error.HTTPError as error:
            said = error.read()
            self.problem(f"the upstream answered {error.code} to {method} {path}: "
                         f"{' '.join(said.decode(errors='replace').split())[:160] or error.reason}")
            return error.code, error.headers.get("Content-Type", "application/json"), said
        except (OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or error
            self.problem(f"cannot reach the upstream at {self.upstream}: {reason}")
            said = json.dumps({"error": {"message": f"crashlab record: cannot reach the upstream: {reason}",
                                         "type": "upstream_unreachable"}}).encode()
            return 502, "application/json", said

    def keep(self, api: str, body: bytes, stream_type: str, answer: bytes) -> None:
        """Read a model call and its reply, and keep them; a problem if either is not its wire's."""
        path = ROUTES[api]
        asked_of, heard_of = readers(api)
        try:
            request = json.loads(body)
            if not isinstance(request, dict):
                raise Malformed("the body is not a JSON object")
            asked = asked_of(request)
        except (ValueError, Malformed) as error:
            self.problem(f"the program's request to {path} is not one of its wire's: {error}")
            return
        try:
            heard = heard_of(answer, asked.stream or stream_type.startswith("text/event-stream"))
        except Malformed as error:
            self.problem(f"the upstream's answer to POST {path} is {error}")
            return
        with self.lock:
            self.exchanges.append(Exchange(api, asked, heard))


def handler(recording: Recording) -> type[BaseHTTPRequestHandler]:
    """The request handler of `recording`'s server: every request passed on, a model call's exchange kept."""
    apis = {route: api for api, route in ROUTES.items()}

    class Passing(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.passed("GET")

        def do_POST(self) -> None:
            self.passed("POST")

        def passed(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP}
            status, kind, answer = recording.forward(method, self.path, headers, body)
            api = apis.get(self.path.partition("?")[0])
            if method == "POST" and api is not None and 200 <= status < 300:
                recording.keep(api, body or b"", kind, answer)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:  # the program's requests are not crashlab's output
            pass

    return Passing
