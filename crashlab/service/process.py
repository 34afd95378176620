"""The harness's handle on a service process: start it, find its URL, reset and read it, stop it.

The service runs in a process of its own (``python -m crashlab.service``), so a loop's death never
touches it and the harness can kill it too. With a control line (``control=True``) it reports every
event on `ServiceProcess.control` and waits for the harness's reply before it answers the loop
(`crashlab.service.control`): whoever holds this handle must answer every frame, or the loop waits.

This module is the harness's side: it imports neither Starlette nor uvicorn nor an HTTP client
beyond the standard library's, so a harness stays as light as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

from crashlab.errors import HarnessError

#: How long a service may take to say its URL, in seconds.
START_TIMEOUT = 10.0
#: How long a control request or a stopping service may take, in seconds.
TIMEOUT = 10.0
#: The service is on this machine: no proxy from the environment stands between.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServiceProcess:
    """A running service: its `url`, the `token` its controls need, the harness's end of its control line
    (`control`), and its process.

    The token is what the service said on its stdout, which only this handle reads: a loop's processes are
    told the URL (`env`), not the token, and a page that reaches the service cannot reset it."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, control: socket.socket | None, errors: IO[bytes],
                 token: str = "", model: bool = False):
        self.process = process
        self.url = url
        self.token = token
        self.control = control
        self.model = model  # whether it plays a job's model
        self._errors = errors
        self._said = ""

    @classmethod
    def start(cls, directory: Path, tracker: str = "keyed", keys: str = "optional", retention: float | None = None,
              control: bool = True, commit: str = "one-txn", steps: bool = False, wrong_at: int = 0,
              no_reply: str = "", late: bool = False, job: str | None = None,
              model_ids: str = "stable", profile: str = "ietf", failed_after: int = 0) -> ServiceProcess:
        """Start a service on `directory` and wait for its URL; `HarnessError`, with its stderr, if none comes.

        `commit` and `steps` say how it makes a request durable, and whether it passes its crash points
        between the steps; with `wrong_at`, its person answers that question wrong; with `no_reply`
        (``K-applied``, ``K-lost``), its K-th changing request gets no reply in time; with `late`, a request
        whose client dies at its point ``sent`` is held until `land`; with `job` (a file, or a shipped job's name),
        it plays that job's model at ``/v1``, its tool-call IDs `model_ids` (``stable`` or ``drifting``); it keeps
        the idempotency contract `profile` (a slug of `crashlab.profiles`), its keys kept `retention` hours if
        given, else the profile's; with `failed_after`, its K-th changing request commits and then answers 500
        (``python -m crashlab.service --help``)."""
        command = [sys.executable, "-m", "crashlab.service", "--dir", str(directory), "--port", "0",
                   "--tracker", tracker, "--keys", keys, "--commit", commit, "--profile", profile]
        command += ["--retention", repr(float(retention))] if retention is not None else []
        command += ["--failed-after-effect", str(failed_after)] if failed_after else []
        command += ["--commit-points"] if steps else []
        command += ["--wrong-at", str(wrong_at)] if wrong_at else []
        command += ["--no-reply", no_reply] if no_reply else []
        command += ["--late"] if late else []
        command += ["--job", job, "--model-ids", model_ids] if job is not None else []
        ours, theirs = socket.socketpair() if control else (None, None)
        if theirs is not None:
            command += ["--control-fd", str(theirs.fileno())]
        errors = tempfile.TemporaryFile()  # noqa: SIM115 (the handle keeps it, for `stderr`)
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,
                                       pass_fds=() if theirs is None else (theirs.fileno(),))
        except BaseException:
            errors.close()
            for end in (ours, theirs):
                if end is not None:
                    end.close()
            raise
        finally:
            if theirs is not None:
                theirs.close()
        try:
            url, token = _first_lines(process, 2, START_TIMEOUT)
        except (TimeoutError, EOFError, OSError, UnicodeDecodeError):
            url, token = "", ""
        except BaseException:
            cls(process, "", ours, errors).close()
            raise
        if not url.startswith("http://") or not token:
            failed = cls(process, url, ours, errors)
            failed.close()
            said = failed.stderr()[-2000:]
            raise HarnessError(f"the service on {directory} did not say its URL and token within {START_TIMEOUT:g} s "
                               f"(exit status {process.returncode}): {said or 'it wrote nothing to stderr'}")
        return cls(process, url, ours, errors, token, model=job is not None)

    def env(self) -> dict[str, str]:
        """The variables that tell a loop's tools where the service is, and, if it plays a job's model, the ones
        the official SDKs read to find their model (any key is taken)."""
        return {
            "CRASHLAB_TRACKER_URL": self.url,
            "CRASHLAB_MCP_URL": self.url + "/mcp",
            "CRASHLAB_PERSON_URL": self.url + "/person",
            "CRASHLAB_MODEL_URL": self.url + "/model",
            **(model_env(self.url) if self.model else {}),
        }

    def kill(self) -> None:
        """SIGKILL the service: what it had not committed is gone, as with any process that dies."""
        self.process.kill()
        self.process.wait()
        self.close()

    def reset(self) -> None:
        """Empty the service: records, keys, fences, counts, the clock's offset, the requests in flight."""
        self._call("POST", "/_crashlab/reset", {})

    def state(self) -> dict[str, Any]:
        """``{"records": [...in commit order], "asks": n, "approvals": n, "model_calls": n}``."""
        return self._call("GET", "/_crashlab/state")

    def advance(self, hours: float) -> None:
        """Move the service's clock on by `hours`: keys older than its retention expire."""
        self._call("POST", "/_crashlab/clock", {"advance_hours": hours})

    def land(self) -> dict[str, Any]:
        """The oldest request held on the wire arrives: ``{"call", "key", "applied", "answer", "fenced", "label"}``."""
        return self._call("POST", "/_crashlab/land", {})

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with DIRECT.open(request, timeout=TIMEOUT) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            said = error.read().decode(errors="replace")[:200]
            raise HarnessError(f"the service refused {method} {path}: {error.code} {said}") from None
        except (OSError, ValueError) as error:
            raise HarnessError(f"the service at {self.url} did not answer {method} {path} ({error})") from None

    def stderr(self) -> str:
        """What the service wrote to stderr so far (all of it, once stopped)."""
        return self._said if self._errors.closed else _tail(self._errors)

    def close(self) -> None:
        """Stop the service: close its control line (which stops it), then SIGTERM, then SIGKILL if need be.

        What it wrote to stderr stays readable (`stderr`).
        """
        if self.control is not None:
            # Shut down, not only closed: a thread blocked reading the line must not keep it open.
            with contextlib.suppress(OSError):  # the service closed it first
                self.control.shutdown(socket.SHUT_RDWR)
            self.control.close()
            with contextlib.suppress(subprocess.TimeoutExpired):  # it stops by itself, or is told to below
                self.process.wait(TIMEOUT)
        _stop(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()
        if not self._errors.closed:  # read now and closed: a handle left for the collector is a leaked descriptor
            self._said = _tail(self._errors)
            self._errors.close()

    def __enter__(self) -> ServiceProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def model_env(url: str) -> dict[str, str]:
    """What points the official OpenAI and Anthropic clients at the model a service at `url` plays: OpenAI's
    base URL ends in /v1, Anthropic's client adds it itself."""
    return {"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "crashlab", "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "crashlab"}


def _first_lines(process: subprocess.Popen[bytes], n: int, timeout: float) -> list[str]:
    """The process's first `n` lines on stdout, each stripped; TimeoutError or EOFError if they do not come."""
    assert process.stdout is not None
    fd, data, deadline = process.stdout.fileno(), b"", time.monotonic() + timeout
    while data.count(b"\n") < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 4096)
        if not chunk:
            raise EOFError
        data += chunk
    return [line.decode().strip() for line in data.split(b"\n")[:n]]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


def _tail(errors: IO[bytes]) -> str:
    errors.flush()
    errors.seek(0)
    return errors.read().decode(errors="replace").strip()
