"""`crashlab record`: a program run once against a real model, written down as a job and its effects.

Nothing here can reach a real provider, so the model is one of the tests' own (tests/scripted_upstream.py): an
HTTP server that answers OpenAI's Chat Completions and Responses and Anthropic's Messages as a provider does,
importing nothing of crashlab's, naming its tool calls as it likes. The programs are examples/agents/openai_loop.py
(the official openai SDK, Chat Completions), tests/programs/responses_agent.py (the same SDK, Responses) and
tests/programs/anthropic_agent.py (the official anthropic SDK, Messages), each written as its SDK's docs write a
tool loop and knowing nothing of crashlab. The proof of a recording is its sweep: the same table as the
hand-written job's.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
import yaml

from crashlab.errors import HarnessError
from crashlab.job import find_job, load_job
from crashlab.record import RecordError, run
from crashlab.service.script import Asked, Heard, Reply, Said, ToolCall

from .conftest import ROOT
from .scripted_upstream import ANSWER, provider

PROGRAMS = ROOT / "tests" / "programs"
AGENT = (sys.executable, str(ROOT / "examples" / "agents" / "openai_loop.py"))
#: A program on each wire the official SDKs speak, each a tool loop written as its SDK's docs write one.
ON_THE_WIRE = {"chat": AGENT, "responses": (sys.executable, str(PROGRAMS / "responses_agent.py")),
               "messages": (sys.executable, str(PROGRAMS / "anthropic_agent.py"))}


def record(tmp_path, upstream: str, *command: str, more: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`crashlab record` as a user runs it, into `tmp_path`/rec."""
    return subprocess.run([sys.executable, "-m", "crashlab", "record", "--upstream", upstream, "--out",
                           str(tmp_path / "rec"), *more, "--", *command], capture_output=True, text=True, cwd=tmp_path)


@pytest.fixture(scope="module")
def upstream():
    with provider() as url:
        yield url


@pytest.fixture(scope="module")
def recorded_on(upstream, tmp_path_factory) -> Callable[[str], Path]:
    """The run of the program on a wire against the scripted provider, recorded once for the tests that read it."""
    done: dict[str, Path] = {}

    def recorded(api: str) -> Path:
        if api not in done:
            where = tmp_path_factory.mktemp(f"recorded-{api}")
            ran = record(where, upstream + "/v1", *ON_THE_WIRE[api])
            assert ran.returncode == 0, ran.stderr
            done[api] = where / "rec"
        return done[api]

    return recorded


@pytest.fixture(scope="module")
def recorded(recorded_on):
    """The openai_loop.py agent's run, recorded."""
    return recorded_on("chat")


@pytest.mark.slow
@pytest.mark.parametrize("api", list(ON_THE_WIRE))
def test_a_recorded_run_is_the_jobs_replies_and_what_its_tools_left_in_the_service(recorded_on, api):
    """The triage job, as the provider played it on each wire, to a program on that wire's official SDK: its replies
    in order, the comment's issue the one A's result gave (written $A, as a hand-written job says it), and the
    issues and the comment the run left, by what each is."""
    recorded = recorded_on(api)
    job, triage = load_job(recorded / "job.yaml"), find_job("triage")
    assert [[(c.tool, c.args) for c in t.calls] for t in job.turns] == \
        [[(c.tool, {**c.args, **({"issue": "$A"} if c.ref else {})}) for c in t.calls] for t in triage.turns]
    assert [[c.id for c in t.calls] for t in job.turns] == [["A", "B"], ["C", "D"], []]
    assert job.turns[-1].answer == ANSWER
    effects = yaml.safe_load((recorded / "effects.yaml").read_text())
    assert effects == {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"},
                       "D": {"comment": "A", "body": triage.calls[3].args["body"]}}


@pytest.mark.slow
def test_the_sweep_of_a_recorded_job_is_the_sweep_of_the_hand_written_one(recorded, cli):
    """Plain and keyed, at depth 1: every row, every count (9 points, plain 3 duplicates, keyed none), the same."""
    agent = " ".join(AGENT)
    rows = {}
    for job in ("recorded", "triage"):
        given = ("--job", str(recorded / "job.yaml"), "--effects", str(recorded / "effects.yaml")) \
            if job == "recorded" else ("--job", "triage")
        code, out, err = cli("sweep", "--command", f"plain={agent}", "--command", f"keyed={agent} --keyed", *given,
                             "--depth", "1", "--format", "json")
        assert code == 0, err
        rows[job] = json.loads(out)
    assert rows["recorded"] == rows["triage"]
    assert [(r["points"], r["dups"]) for r in rows["recorded"]] == [(9, 3), (9, 0)]


@pytest.mark.slow
def test_the_sweep_of_a_job_recorded_over_anthropics_wire_is_the_sweep_of_the_hand_written_one(recorded_on, cli):
    """The anthropic SDK's program, swept with the job it recorded and with the triage job, the job's model served
    to it over Anthropic's Messages: every row, every count (9 points, 3 duplicates), the same. Plain only: each
    scenario starts the program afresh, and the keyed row would double a sweep that takes minutes."""
    agent = " ".join(ON_THE_WIRE["messages"])
    recorded = recorded_on("messages")
    rows = {}
    for job, given in {"recorded": ("--job", str(recorded / "job.yaml"), "--effects", str(recorded / "effects.yaml")),
                       "triage": ("--job", "triage")}.items():
        code, out, err = cli("sweep", "--command", f"plain={agent}", *given, "--depth", "1", "--format", "json")
        assert code == 0, err
        rows[job] = json.loads(out)
    assert rows["recorded"] == rows["triage"]
    assert [(r["points"], r["dups"], r["missing"]) for r in rows["recorded"]] == [(9, 3, 0)]


@pytest.mark.slow
def test_a_streaming_program_is_recorded_as_the_same_job(upstream, tmp_path, recorded):
    """The proxy passes a stream on as it came, and reads the reply off its chunks."""
    program = tmp_path / "streaming_agent.py"
    program.write_text((ROOT / "examples" / "agents" / "openai_loop.py").read_text().replace(
        "client.chat.completions.create(model=\"gpt-4o-mini\", messages=messages, tools=TOOLS)",
        "client.chat.completions.stream(model=\"gpt-4o-mini\", messages=messages, tools=TOOLS).__enter__()"
        ".get_final_completion()"))
    done = record(tmp_path, upstream + "/v1", sys.executable, str(program))
    assert done.returncode == 0, done.stderr
    assert load_job(tmp_path / "rec" / "job.yaml").fingerprint == load_job(recorded / "job.yaml").fingerprint


def test_a_recording_overwrites_nothing_without_force(tmp_path):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "job.yaml").write_text("mine")
    done = record(tmp_path, "http://127.0.0.1:9", *AGENT)
    assert (done.returncode, done.stdout) == (2, "") and done.stderr.count("\n") == 1
    assert "rec/job.yaml exists: crashlab record overwrites nothing without --force" in done.stderr
    assert (tmp_path / "rec" / "job.yaml").read_text() == "mine"


def nothing_listens() -> str:
    """A URL on this machine where no server listens."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{free.getsockname()[1]}/v1"


@pytest.mark.parametrize(("upstream", "command", "says"), [
    ("none", AGENT, "cannot reach the upstream at http://127.0.0.1:"),
    ("not-a-url", AGENT, "--upstream 'not-a-url' is not an http:// or https:// URL"),
    pytest.param("garbage", AGENT, "the upstream's answer to POST /v1/chat/completions is not JSON: b'<html>a page, "
                 "not a model", marks=pytest.mark.slow),
    pytest.param("scripted", (sys.executable, "-c", "import sys; sys.exit(3)"), "exited with status 3",
                 marks=pytest.mark.slow),
    pytest.param("scripted", (sys.executable, str(PROGRAMS / "triage_agent.py")), "never called the model: point its "
                 "client at OPENAI_BASE_URL or ANTHROPIC_BASE_URL", marks=pytest.mark.slow),
    ("scripted", ("no-such-program-here",), "no program 'no-such-program-here' here"),
], ids=["unreachable", "no url", "garbage", "exits 3", "never asks", "no program"])
def test_a_run_that_cannot_be_recorded_is_refused_in_one_line_and_writes_nothing(tmp_path, upstream, command, says):
    with provider() as url:
        given = {"none": nothing_listens(), "not-a-url": "not-a-url", "garbage": f"{url}/garbage/v1",
                 "scripted": f"{url}/v1"}[upstream]
        done = record(tmp_path, given, *command)
    assert (done.returncode, done.stdout) == (2, "") and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("crashlab: error: ") and says in done.stderr
    assert not (tmp_path / "rec").exists()


# The proxy reads each wire's replies as the SDKs' types say them: crashlab's own model's replies, read back.

PLANNED = Reply(1, (), None)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_each_wires_reply_is_heard_as_its_calls_and_text(api, stream):
    from crashlab.service.recording import readers
    from crashlab.service.script import Planned

    calls = Reply(1, (Planned("x1", "A", "create_issue", {"title": "t", "body": "b"}),
                      Planned("x2", "B", "search", {"query": "ü"})), None)
    answer = Reply(2, (), "all done")
    asked = Asked((), (), "m", stream)
    _, heard_of = readers(api)
    for reply in (calls, answer):
        if api == "messages":
            from crashlab.service.anthropic_wire import messages_reply as write

            written = write(reply, asked, "id")
        elif api == "chat":
            from crashlab.service.openai_wire import chat_reply

            written = chat_reply(reply, asked, {}, "id", 0)
        else:
            from crashlab.service.openai_wire import responses_reply

            written = responses_reply(reply, asked, "id", 0)
        data = written if isinstance(written, bytes) else json.dumps(written).encode()
        heard = heard_of(data, stream)
        prefix = "toolu_" if api == "messages" else "call_"
        assert heard == Heard(tuple(ToolCall(prefix + c.id, c.name, c.arguments) for c in reply.calls),
                              reply.answer or "")


def test_a_conversation_not_asked_in_turn_is_refused_in_one_line():
    from crashlab.record import job_of
    from crashlab.service.recording import Exchange

    said = Heard((ToolCall("c1", "search", {"query": "q"}),), "")
    twice = [Exchange("chat", Asked((), (), "m", False), said), Exchange("chat", Asked((), (), "m", False), said)]
    with pytest.raises(RecordError, match=r"^the program's model call 2 holds 0 of the model's replies where 1 came "
                                          "before it: a recording is of one conversation, asked in turn$"):
        job_of(twice, "x", "agent")
    unanswered = [Exchange("chat", Asked((), (), "m", False), said)]
    with pytest.raises(RecordError, match="the model's last reply calls search, and the program ended without"):
        job_of(unanswered, "x", "agent")
    ended = [Exchange("chat", Asked((), (), "m", False), Heard((), "done")),
             Exchange("chat", Asked((Said(()),), (), "m", False), Heard((), "again"))]
    with pytest.raises(RecordError, match="the model's reply 1 is a final answer"):
        job_of(ended, "x", "agent")


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process `pid` is gone (or a zombie, dead and waiting to be reaped) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_a_helper_the_program_detached_goes_with_the_recording(tmp_path):
    """A helper in a session of its own (``setsid``) is not left running to post into a finished recording: it is
    in the program's cgroup, and goes with it."""
    detaches = ("import subprocess, sys; helper = subprocess.Popen(['setsid', 'sleep', '300']); "
                "open(sys.argv[1], 'w').write(str(helper.pid)); sys.exit(3)")
    with provider() as url:
        done = record(tmp_path, f"{url}/v1", sys.executable, "-c", detaches, str(tmp_path / "helper.pid"))
    assert done.returncode == 2 and "exited with status 3" in done.stderr
    assert gone(int((tmp_path / "helper.pid").read_text()))


# The program runs as a sweep runs each process (`crashlab.runners.group.Child`): bounded by its time limit, and
# whatever it started goes when it does.

def test_the_program_s_exit_status_and_last_words_are_kept(tmp_path):
    (tmp_path / "run").mkdir()
    says = "import sys; print('to stdout'); sys.exit('the last words')"
    assert run((sys.executable, "-c", says), tmp_path, dict(os.environ), 10) == (1, " (the last words)")
    assert (tmp_path / "stdout").read_text() == "to stdout\n"


def test_a_program_past_its_time_limit_is_refused_and_killed(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(RecordError, match=r"sleep 60' ran past --time-limit 0.3 s, and was killed$"):
        run(("sh", "-c", "echo $$; exec sleep 60"), tmp_path, dict(os.environ), 0.3)
    assert gone(int((tmp_path / "stdout").read_text()))


def test_a_helper_that_outlived_the_program_fails_the_recording_said_as_a_sweep_says_it(tmp_path, monkeypatch):
    """Where no cgroup can be made, a helper in a session of its own leaves the program's process group, and is still
    alive once the program exited and its group was killed: the recording fails, naming it as a sweep names a
    survivor, rather than leave it to post into the service after the recording is written; and it is killed."""
    from crashlab.runners import group

    monkeypatch.setattr(group, "_own_cgroup", lambda: (None, "none here, for this test"))
    monkeypatch.setattr(group, "_parent", "")
    (tmp_path / "run").mkdir()
    detaches = "import subprocess; print(subprocess.Popen(['sleep', '300'], start_new_session=True).pid)"
    try:
        with pytest.raises(HarnessError, match=r"^a process of the recorded run outlived its program: PID (\d+), "
                                               r"command line 'sleep 300'$") as failed:
            run((sys.executable, "-c", detaches), tmp_path, dict(os.environ), 10)
    finally:
        helper = int((tmp_path / "stdout").read_text())
        with suppress(ProcessLookupError):
            os.kill(helper, signal.SIGKILL)
    assert f"PID {helper}, " in str(failed.value)
    assert gone(helper)
