"""The job's model as a service: the official OpenAI and Anthropic clients, unchanged, talk to crashlab's.

A program points its SDK at the service (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, any key) and
keeps its own conversation, as programs do. The reply is decided by that conversation: the k-th
reply for a conversation that holds the job's first k-1 replies and their results, so asking again
gets the same reply, with the same tool-call IDs (or new ones, when the IDs drift). A conversation
off the script is refused in one line that shows where it parts from the job, and the control line
sees every model call between the points ``model-asked`` and ``model-answered``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import openai
import pytest

from crashlab.errors import BadInput
from crashlab.job import find_job
from crashlab.service import control
from crashlab.service.process import ServiceProcess
from crashlab.service.script import Script, issue_number

from .test_service import Harness

#: The tools a triage program declares, by the names and parameters the job's calls use.
PARAMETERS = {"create_issue": ("title", "body"), "comment": ("issue", "body"), "search": ("query",)}
SCHEMAS = {name: {"type": "object", "properties": {p: {"type": "integer" if p == "issue" else "string"} for p in ps},
                  "required": list(ps)} for name, ps in PARAMETERS.items()}
#: What the triage job's model replies, turn by turn (a comment's "$A" is the number A's result gave: 1).
TRIAGE = [
    [("create_issue", {"title": "Login fails on Safari", "body": "Users report a blank page after login."}),
     ("create_issue", {"title": "Export times out", "body": "CSV export of large projects times out."})],
    [("search", {"query": "login"}),
     ("comment", {"issue": 1, "body": "Same root cause as the session-cookie bug; see search."})],
]
ANSWER = "Filed two issues and linked the login report to the cookie bug."


@dataclass
class Heard:
    """A reply as the program heard it: each tool call's ID, tool and arguments, or the final answer."""

    calls: list[tuple[str, str, dict[str, Any]]]
    answer: str | None
    raw: Any  # what the program appends to its conversation

    @property
    def said(self) -> list[tuple[str, dict[str, Any]]]:
        return [(name, arguments) for _, name, arguments in self.calls]


class Program:
    """A program that keeps its conversation and asks the model for the next reply through an official SDK."""

    def ask(self) -> Heard:
        raise NotImplementedError

    def heard(self, reply: Heard, results: list[Any]) -> None:
        """Put the reply and its calls' results (each as JSON) into the conversation."""
        raise NotImplementedError


class Chat(Program):
    def __init__(self, url: str, stream: bool, tools: dict[str, dict] = SCHEMAS):
        self.client = openai.OpenAI(base_url=url + "/v1", api_key="any key", max_retries=0)
        self.stream = stream
        self.tools = [{"type": "function", "function": {"name": name, "parameters": schema}}
                      for name, schema in tools.items()]
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "Triage the login reports."}]

    def ask(self) -> Heard:
        if self.stream:
            with self.client.chat.completions.stream(model="any", messages=self.messages, tools=self.tools) as stream:
                completion = stream.get_final_completion()
        else:
            completion = self.client.chat.completions.create(model="any", messages=self.messages, tools=self.tools)
        message = completion.choices[0].message
        calls = [(call.id, call.function.name, json.loads(call.function.arguments)) for call in message.tool_calls or []]
        return Heard(calls, message.content, message)

    def heard(self, reply: Heard, results: list[Any]) -> None:
        self.messages.append(reply.raw.model_dump(exclude_none=True, exclude={"parsed"}))
        self.messages += [{"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}
                          for (call_id, _, _), result in zip(reply.calls, results, strict=True)]


class Responses(Program):
    def __init__(self, url: str, stream: bool, tools: dict[str, dict] = SCHEMAS):
        self.client = openai.OpenAI(base_url=url + "/v1", api_key="any key", max_retries=0)
        self.stream = stream
        self.tools = [{"type": "function", "name": name, "parameters": schema} for name, schema in tools.items()]
        self.input: list[dict[str, Any]] = [{"role": "user", "content": "Triage the login reports."}]

    def ask(self) -> Heard:
        if self.stream:
            with self.client.responses.stream(model="any", input=self.input, tools=self.tools) as stream:
                response = stream.get_final_response()
        else:
            response = self.client.responses.create(model="any", input=self.input, tools=self.tools)
        calls = [(item.call_id, item.name, json.loads(item.arguments)) for item in response.output
                 if item.type == "function_call"]
        return Heard(calls, response.output_text or None, response.output)

    def heard(self, reply: Heard, results: list[Any]) -> None:
        self.input += [item.model_dump(exclude_none=True) for item in reply.raw]
        self.input += [{"type": "function_call_output", "call_id": call_id, "output": json.dumps(result)}
                       for (call_id, _, _), result in zip(reply.calls, results, strict=True)]


class Messages(Program):
    def __init__(self, url: str, stream: bool, tools: dict[str, dict] = SCHEMAS):
        self.client = anthropic.Anthropic(base_url=url, api_key="any key", max_retries=0)
        self.stream = stream
        self.tools = [{"name": name, "input_schema": schema} for name, schema in tools.items()]
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "Triage the login reports."}]

    def ask(self) -> Heard:
        asked = {"model": "any", "max_tokens": 1024, "messages": self.messages, "tools": self.tools}
        if self.stream:
            with self.client.messages.stream(**asked) as stream:
                message = stream.get_final_message()
        else:
            message = self.client.messages.create(**asked)
        calls = [(block.id, block.name, block.input) for block in message.content if block.type == "tool_use"]
        texts = [block.text for block in message.content if block.type == "text"]
        return Heard(calls, "".join(texts) or None, message.content)

    def heard(self, reply: Heard, results: list[Any]) -> None:
        self.messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in reply.raw]})
        self.messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": json.dumps(result)}
            for (call_id, _, _), result in zip(reply.calls, results, strict=True)]})


PROGRAMS: dict[str, Callable[..., Program]] = {"chat": Chat, "responses": Responses, "messages": Messages}
WIRES = [(api, stream) for api in PROGRAMS for stream in (False, True)]
WIRE_IDS = [f"{api}-{'stream' if stream else 'whole'}" for api, stream in WIRES]


@pytest.fixture(scope="module")
def services(tmp_path_factory) -> Iterator[Callable[..., ServiceProcess]]:
    """One service per setting, playing the triage job's model, started once for the module; reset for each test."""
    started: dict[tuple[str, str], ServiceProcess] = {}

    def get(job: str = "triage", model_ids: str = "stable") -> ServiceProcess:
        if (job, model_ids) not in started:
            directory = tmp_path_factory.mktemp(f"{job}-{model_ids}")
            started[job, model_ids] = ServiceProcess.start(directory, control=False, job=job, model_ids=model_ids)
        started[job, model_ids].reset()
        return started[job, model_ids]

    yield get
    for service in started.values():
        service.close()


@pytest.fixture
def service(services) -> ServiceProcess:
    return services()


def results(heard: Heard, first: int = 1) -> list[Any]:
    """What a triage program's tools answer: an issue's or comment's number, a search's issues."""
    return [{"issues": [{"number": 1}]} if name == "search" else {"number": first + i}
            for i, (_, name, _) in enumerate(heard.calls)]


# The script, played over every wire.


@pytest.mark.parametrize(("api", "stream"), WIRES, ids=WIRE_IDS)
def test_each_wire_hears_the_jobs_replies_in_order_and_the_same_reply_when_it_asks_again(service, api, stream):
    program = PROGRAMS[api](service.url, stream)
    first = program.ask()
    assert (first.said, first.answer) == (TRIAGE[0], None)
    again = program.ask()
    assert again.calls == first.calls, "the same conversation gets the same reply, tool-call IDs and all"
    program.heard(first, results(first))
    second = program.ask()
    assert (second.said, second.answer) == (TRIAGE[1], None)
    program.heard(second, results(second))
    last = program.ask()
    assert (last.calls, last.answer) == ([], ANSWER)
    assert service.state()["model_calls"] == 4, "every model call is counted, the repeated one too"


@pytest.mark.parametrize("api", PROGRAMS)
def test_a_tool_call_id_is_the_same_for_its_run_turn_and_call_whatever_asks_and_new_when_the_ids_drift(services, api):
    stable = [PROGRAMS[api](services().url, False).ask() for _ in range(2)]
    assert stable[0].calls == stable[1].calls, "two programs, one conversation: the same IDs"
    drifting = services(model_ids="drifting")
    drifted = [PROGRAMS[api](drifting.url, False).ask() for _ in range(3)]
    assert [heard.said for heard in drifted] == [TRIAGE[0]] * 3, "the same calls"
    ids = [[call_id for call_id, _, _ in heard.calls] for heard in drifted]
    assert ids[0] == [call_id for call_id, _, _ in stable[0].calls], "the first time, as stable"
    assert len({call_id for each in ids for call_id in each}) == 6, "each time asked again, new IDs"


def test_a_restart_that_asks_with_a_conversation_it_saved_gets_the_reply_the_dead_process_got(service):
    before = Chat(service.url, stream=False)
    first = before.ask()
    before.heard(first, results(first))
    lost = before.ask()  # the process dies here, having saved only the conversation up to the results
    restarted = Chat(service.url, stream=False)
    restarted.messages = json.loads(json.dumps(before.messages))
    assert restarted.ask().calls == lost.calls
    assert service.state()["model_calls"] == 3


def test_a_comments_issue_is_the_number_the_issues_result_gave_the_program(service):
    program = Chat(service.url, stream=False)
    first = program.ask()
    program.heard(first, results(first, first=41))  # A is #41 in this tracker, B #42
    assert program.ask().said[1] == ("comment", {"issue": 41, "body": TRIAGE[1][1][1]["body"]})


@pytest.mark.parametrize(("text", "number"), [
    ('{"number": 7}', 7), ("7", 7), ("Filed issue #12 (see #12).", 12), ("Created issue 3.", 3),
    ('{"number": 1, "replayed": true}', 1), ("#3 and #4", None), ("no number", None), ('{"error": "500"}', 500),
])
def test_the_issue_a_create_issue_result_names(text, number):
    assert issue_number(text) == number


# Off the script: one line that shows the difference, for the program and for the harness.


def replied(program: Program) -> Program:
    """The program, with the job's first reply and its results in its conversation."""
    first = program.ask()
    program.heard(first, results(first))
    return program


def first_reply_altered(program: Chat, change: Callable[[dict], None]) -> Chat:
    """The program, with the job's first reply in its conversation as `change` altered its first call."""
    replied(program)
    change(program.messages[1]["tool_calls"][0]["function"])
    return program


def one_result_short(program: Chat) -> Chat:
    """The program, with the last of its tool results lost."""
    program.messages.pop()
    return program


OFF_SCRIPT: list[tuple[str, Callable[[str], Program], str]] = [
    ("other arguments", lambda url: first_reply_altered(Chat(url, False), lambda f: f.update(
        arguments=json.dumps({"title": "Login fails on Chrome", "body": "Users report a blank page after login."}))),
     "reply 1's call create_issue A has title 'Login fails on Chrome' where the job has 'Login fails on Safari'"),
    ("an argument missing", lambda url: first_reply_altered(Chat(url, False), lambda f: f.update(
        arguments=json.dumps({"title": "Login fails on Safari"}))),
     "reply 1's call create_issue A has no body (the job's: 'Users report a blank page after login.')"),
    ("a tool the job does not know", lambda url: first_reply_altered(Chat(url, False), lambda f: f.update(
        name="file_issue")), "reply 1 calls 'file_issue' where the job's turn 1 calls create_issue A"),
    ("a tool the request does not declare", lambda url: Chat(url, False, tools={"search": SCHEMAS["search"]}),
     "the job's turn 1 calls create_issue A, a tool the request does not declare (it declares: 'search')"),
    ("a tool that takes other parameters", lambda url: Chat(url, False, tools={
        **SCHEMAS, "create_issue": {"type": "object", "properties": {"title": {"type": "string"}}}}),
     "the job's turn 1 calls create_issue A with body, which the request's create_issue does not take"),
    ("a call with no result", lambda url: one_result_short(replied(Chat(url, False))),
     "reply 1's call create_issue B (ID 'call_"),
    ("more replies than the job has", lambda url: replied(replied(replied(Chat(url, False)))),
     "the conversation holds the job's 3 replies, the last its final answer: the job has no reply 4"),
]


@pytest.mark.parametrize(("make", "says"), [(make, says) for _, make, says in OFF_SCRIPT],
                         ids=[name for name, _, _ in OFF_SCRIPT])
def test_a_conversation_off_the_script_is_refused_in_one_line_that_shows_the_difference(service, make, says):
    program = make(service.url)
    paid = service.state()["model_calls"]
    with pytest.raises(openai.BadRequestError) as refused:
        program.ask()
    message = refused.value.message
    assert message.startswith("Error code: 400 - off the script of job triage: ") and says in message
    assert "\n" not in message
    assert service.state()["model_calls"] == paid, "a refused call is not paid"


def test_anthropics_client_hears_an_off_script_refusal_in_one_line_too(service):
    program = Messages(service.url, stream=True, tools={"search": SCHEMAS["search"]})
    with pytest.raises(anthropic.BadRequestError) as refused:
        program.ask()
    assert refused.value.body == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "off the script of job triage: the job's turn 1 calls "
        "create_issue A, a tool the request does not declare (it declares: 'search')"}}


def test_a_job_whose_comment_names_an_issue_of_the_same_reply_cannot_be_played_and_says_why():
    with pytest.raises(BadInput, match=r"^wide: turn 1 call CA comments on \$A, made in the same reply: .* move CA to "
                                       "a later turn$"):
        Script(find_job("wide"))


# Hostile requests: 400 in one line, never a 500, nothing counted.

HOSTILE = [
    ("/v1/chat/completions", b"{not json", "the body is not JSON"),
    ("/v1/chat/completions", b"[]", "the body must be a JSON object"),
    ("/v1/chat/completions", b'{"model": "m"}', "messages is missing: it is required, an array"),
    ("/v1/chat/completions", b'{"model": "m", "messages": {}}', "messages must be an array, not an object"),
    ("/v1/chat/completions", b'{"model": 1, "messages": []}', "model must be a string, not a number"),
    ("/v1/chat/completions", b'{"model": "m", "messages": [7]}', "messages[0] must be an object, not a number"),
    ("/v1/chat/completions", b'{"model": "m", "messages": [{"role": "function"}]}', "messages[0].role 'function' is "
     "not one of system, developer, user, assistant, tool"),
    ("/v1/chat/completions", b'{"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c", '
     b'"function": {"name": null, "arguments": "{}"}}]}]}', "messages[0].tool_calls[0].function.name must be a "
     "string, not null"),
    ("/v1/chat/completions", b'{"model": "m", "messages": [], "stream": "yes"}', "stream must be a boolean"),
    ("/v1/chat/completions", b'{"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": 5}]}',
     "messages[0].content must be a string or an array of parts, not a number"),
    ("/v1/responses", b'{"model": "m"}', "input is missing: it is required, a string or an array of items"),
    ("/v1/responses", b'{"model": "m", "input": "hi", "previous_response_id": "resp_1"}',
     "previous_response_id: this model keeps no conversations"),
    ("/v1/responses", b'{"model": "m", "input": [{"type": "web_search_call"}]}', "input[0].type 'web_search_call' "
     "is an item this model does not read"),
    ("/v1/responses", b'{"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "search"}]}',
     "input[0].arguments is missing"),
    ("/v1/messages", b'{"model": "m", "max_tokens": 9, "messages": [{"role": "system", "content": "x"}]}',
     "messages[0].role 'system' is not user or assistant"),
    ("/v1/messages", b'{"model": "m", "max_tokens": 9, "messages": [{"role": "assistant", "content": [{"type": '
     b'"tool_use", "id": "t", "name": "search", "input": "query"}]}]}', "messages[0].content[0].input must be an "
     "object, not a string"),
    ("/v1/messages", b'{"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": 3}]}',
     "messages[0].content must be an array, not a number"),
]


@pytest.mark.parametrize(("path", "content", "says"), HOSTILE, ids=[f"{p[4:]} {c[:40]!r}" for p, c, _ in HOSTILE])
def test_a_malformed_request_is_400_in_one_line_in_its_wires_error_and_counts_nothing(service, path, content, says):
    answer = httpx.post(service.url + path, content=content, headers={"Content-Type": "application/json"},
                        trust_env=False)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and says in error["message"] and "\n" not in error["message"]
    assert service.state()["model_calls"] == 0


def test_a_service_that_plays_no_job_says_so_in_one_line(tmp_path):
    with ServiceProcess.start(tmp_path, control=False) as bare:
        assert "OPENAI_BASE_URL" not in bare.env()
        with pytest.raises(openai.NotFoundError, match=r"this service plays no job's model: start it with --job JOB$"):
            Chat(bare.url, stream=False).ask()


def test_env_points_the_official_sdks_at_the_model_with_any_key(service):
    assert {name: value for name, value in service.env().items() if not name.startswith("CRASHLAB_")} == {
        "OPENAI_BASE_URL": service.url + "/v1", "OPENAI_API_KEY": "crashlab",
        "ANTHROPIC_BASE_URL": service.url, "ANTHROPIC_API_KEY": "crashlab"}


def test_neither_crashlab_help_nor_a_service_imports_a_models_sdk_before_its_route_is_asked():
    probe = ("import sys; from crashlab.cli import cli; import crashlab.service.server; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'anthropic'}))")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout == "[]\n"


# The control line: the model's crash points and its notes.


@pytest.fixture(scope="module")
def lined(tmp_path_factory) -> Iterator[tuple[ServiceProcess, Harness]]:
    service = ServiceProcess.start(tmp_path_factory.mktemp("lined"), control=True, job="triage")
    assert service.control is not None
    harness = Harness(service.control)
    harness.start()
    yield service, harness
    service.close()


def test_a_model_call_passes_model_asked_then_is_counted_with_model_answered_and_off_script_is_noted(lined):
    service, harness = lined
    service.reset()
    harness.expect()
    program = Messages(service.url, stream=False)
    first = program.ask()
    with pytest.raises(openai.BadRequestError):
        Chat(service.url, stream=False, tools={}).ask()
    httpx.post(service.url + "/v1/responses", json={"input": "no model"}, trust_env=False)
    ids = {"A": first.calls[0][0], "B": first.calls[1][0]}
    assert ids["A"].startswith("toolu_")
    assert harness.frames == [
        {"kind": "point", "label": "model-asked", "detail": {"api": "messages", "turn": 1}},
        {"kind": "model", "label": "call", "point": "model-answered",
         "detail": {"calls": 1, "call_count": 1, "reply": "A B", "api": "messages", "turn": 1, "ids": ids}},
        {"kind": "off-script", "label": "model", "detail": {"api": "chat", "why": "the job's turn 1 calls "
                                                            "create_issue A, a tool the request does not declare "
                                                            "(it declares: none)"}},
        {"kind": "refused", "label": "model", "detail": {"status": 400, "key": None, "api": "responses",
                                                         "why": "model is missing: it is required, a string"}},
    ]


def test_a_program_killed_at_model_asked_is_answered_by_nobody_pays_nothing_and_passes_no_more_points(lined):
    service, harness = lined
    service.reset()
    harness.expect(word=lambda frame: control.GONE if frame.get("label") == "model-asked" else control.GO)
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}],
            "tools": [{"type": "function", "function": {"name": name}} for name in SCHEMAS]}
    answer = httpx.post(service.url + "/v1/chat/completions", json=body, trust_env=False)
    assert answer.status_code == 503  # the harness killed the program: no one is there to read this
    assert [frame["label"] for frame in harness.frames] == ["model-asked"]
    harness.expect()
    restarted = httpx.post(service.url + "/v1/chat/completions", json=body, trust_env=False)
    assert restarted.json()["choices"][0]["finish_reason"] == "tool_calls", "the service went on to the restart"
    assert [frame["label"] for frame in harness.frames] == ["model-asked", "call"]
    assert service.state()["model_calls"] == 1, "the dead process's call was never paid"


def test_gone_is_a_word_for_a_crash_point_only_and_anything_else_breaks_the_line(tmp_path):
    service = ServiceProcess.start(tmp_path, control=True, job="triage")
    assert service.control is not None
    harness = Harness(service.control)
    harness.expect(word=lambda frame: control.GONE)
    harness.start()
    try:
        httpx.post(service.url + "/model/calls", trust_env=False)  # a model event, no crash point: GONE breaks it
        assert service.process.wait(10) == 1
        assert "a reply that is not {'go': True}: {'gone': True}" in service.stderr()
    finally:
        service.close()


# crashlab serve --job.


def test_crashlab_serve_refuses_a_job_it_cannot_play_in_one_line_before_it_makes_anything(cli, tmp_path):
    code, out, err = cli("serve", "--dir", str(tmp_path / "svc"), "--job", "wide")
    assert (code, out) == (2, "")
    assert err.startswith("crashlab: error: wide: turn 1 call CA comments on $A, made in the same reply")
    assert err.count("\n") == 1 and not (tmp_path / "svc").exists()
    assert cli("serve", "--dir", str(tmp_path / "svc"), "--job", "no-such-job")[2].startswith(
        "crashlab: error: no job file or shipped job 'no-such-job'")


def test_crashlab_serve_spells_the_model_ids_as_the_service_takes_them():
    from crashlab.cli.serve import MODEL_IDS
    from crashlab.service.script import MODEL_IDS as TAKEN

    assert MODEL_IDS == TAKEN


OWN_JOB = """name: mail
turns:
  - calls: [{id: M, tool: send_email, args: {to: [ops@example.com], urgent: true, meta: {tries: 2, note: null}}}]
  - answer: sent
"""


@pytest.mark.slow
def test_a_tool_of_the_programs_own_is_played_with_its_json_arguments_on_every_wire(tmp_path):
    """A job's call may be any tool a program declares, its arguments any JSON: the model calls it as the job says."""
    (tmp_path / "mail.yaml").write_text(OWN_JOB)
    with ServiceProcess.start(tmp_path, control=False, job=str(tmp_path / "mail.yaml")) as service:
        for api, make in PROGRAMS.items():
            service.reset()
            program = make(service.url, False, tools={"send_email": {"type": "object"}})
            first = program.ask()
            assert first.said == [("send_email", {"to": ["ops@example.com"], "urgent": True,
                                                  "meta": {"tries": 2, "note": None}})], api
            program.heard(first, [{"sent": True}])
            assert program.ask().answer == "sent", api
