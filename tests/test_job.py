"""The job YAML contract: the triage job loads; anything else names the file, the place and the problem."""

import hashlib
import json

import pytest
import yaml

from crashlab.job import JobError, find_job, load_job, parse_job, shipped_jobs
from crashlab.job.reader import ID_GRAMMAR, TEXT_LIMITS
from crashlab.job.schema import job_schema

from .conftest import SCENARIOS


def write(tmp_path, text):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def test_the_triage_job_loads(triage):
    assert triage.name == "triage"
    assert triage.run == "triage-run-1"
    assert [[c.id for c in t.calls] for t in triage.turns] == [["A", "B"], ["S", "C"], []]
    assert triage.turns[-1].is_final
    assert [c.id for c in triage.changing_calls] == ["A", "B", "C"]
    assert triage.calls[3].ref == "A"


def test_the_run_id_defaults_from_the_name(tmp_path):
    job = load_job(write(tmp_path, "name: tiny\nturns:\n  - answer: done\n"))
    assert job.run == "tiny-run-1"


GOOD_CALL = "{id: A, tool: create_issue, args: {title: t, body: b}}"


@pytest.mark.parametrize(
    ("text", "place", "problem"),
    [
        ("name: x\nturns:\n  - calls: [{id: A, tool: delete repo, args: {}}]\n  - answer: a\n",
         "turn 1 call 1", "tool 'delete repo' is none of crashlab's (create_issue, comment, search) nor a tool's name"),
        ("name: x\nturns:\n  - calls: [{id: A, tool: send_email, args: {at: 2024-01-01}}]\n  - answer: a\n",
         "turn 1 call 1", "args.at must be JSON: a string, number, boolean, null, list or mapping (got a date)"),
        ("name: x\nturns:\n  - calls: [{id: C, tool: comment, args: {issue: $Z, body: b}}]\n  - answer: a\n",
         "turn 1 call 1", "issue '$Z' must be an integer or \"$ID\" of an earlier create_issue call"),
        (f"name: x\nturns:\n  - calls: [{GOOD_CALL}]\n  - calls: [{GOOD_CALL}]\n  - answer: a\n",
         "turn 2 call 1", "duplicate call ID 'A'"),
        (f"name: x\nturns:\n  - calls: [{GOOD_CALL}]\n",
         "turns", "missing the final answer"),
        ("name: x\nturns:\n  - answer: a\n  - answer: b\n",
         "turn 1", "exactly one"),
        ("name: x\nturns:\n  - calls: [{id: A, tool: create_issue, args: {title: t}}]\n  - answer: a\n",
         "turn 1 call 1", "create_issue takes exactly the args title, body"),
        ("turns:\n  - answer: a\n", "name", "required"),
        ("name: x\nturns:\n  - calls: [{id: S, tool: search, args: {query: q}, retries: 3}]\n  - answer: a\n",
         "turn 1 call 1", "unknown field 'retries'"),
    ],
)
def test_a_bad_job_names_file_place_and_problem(tmp_path, text, place, problem):
    path = write(tmp_path, text)
    with pytest.raises(JobError) as error:
        load_job(path)
    assert str(error.value).startswith(f"{path}: {place}: ")
    assert problem in str(error.value)


def test_invalid_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "name: x\nturns:\n  - calls: [unclosed\n")
    with pytest.raises(JobError, match=rf"^{path}: line \d+: invalid YAML"):
        load_job(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(JobError, match="no such job file"):
        load_job(tmp_path / "absent.yaml")


def test_every_shipped_job_loads_by_name_with_a_description_and_the_hash_of_its_bytes():
    assert shipped_jobs() == ["approval", "one-per-turn", "read-only", "server-dies", "triage", "wide"]
    for name in shipped_jobs():
        job = find_job(name)
        assert job.source == name and job.name == name and job.description
        assert job.sha256 == hashlib.sha256((SCENARIOS / f"{name}.yaml").read_bytes()).hexdigest()


def test_a_job_spec_is_a_path_when_it_looks_like_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "triage").write_text("name: mine\nturns: [{answer: a}]\n")
    assert find_job("triage").name == "mine"  # an existing file wins over the shipped job
    with pytest.raises(JobError, match=r"^other\.yaml: no such job file$"):
        find_job("other.yaml")
    with pytest.raises(JobError, match=r"no job file or shipped job 'other' \(shipped: approval, "):
        find_job("other")


def test_a_duplicate_key_names_its_line_and_the_first_one(tmp_path):
    path = write(tmp_path, "name: x\nturns:\n  - answer: a\nname: y\n")
    with pytest.raises(JobError, match=rf"^{path}: line 4: invalid YAML: duplicate key 'name' \(first on line 1\)$"):
        load_job(path)


def test_merge_keys_may_override_what_they_merge(tmp_path):
    job = load_job(write(tmp_path, "name: x\nturns:\n  - calls: [{id: A, tool: create_issue, "
                                   "args: {<<: {title: t, body: b}, body: c}}]\n  - answer: a\n"))
    assert job.calls[0].args == {"title": "t", "body": "c"}


SCHEMA_REFUSES = [
    {"name": "x"},
    {"name": "a b", "turns": [{"answer": "a"}]},
    {"name": "x", "turns": [{"answer": 5}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "create_issue", "args": {"title": 5, "body": "b"}}]}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "search", "args": {"query": "q" * 257}}]}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "comment", "args": {"issue": 0, "body": "b"}}]}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "comment", "args": {"issue": True, "body": "b"}}]}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "delete repo", "args": {}}]}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "send_email", "args": {"to": "x"},
                                        "needs_approval": False}]}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "create_issue", "args": {"title": "t", "body": "b",
                                                                                "labels": []}}]}]},
    {"name": "x", "turns": [{"calls": [{"id": "A", "tool": "search", "args": {"query": "q"}, "retries": 3}]}]},
]


def conforms(data) -> bool:
    """Whether `data` fits the job file's JSON Schema, as an editor checks it."""
    import jsonschema

    return jsonschema.Draft202012Validator(job_schema()).is_valid(data)


def test_the_schema_holds_every_shipped_job_and_refuses_what_the_reader_refuses_by_type_or_size():
    """crashlab.job.schema mirrors the reader's types and limits for editors; it must not drift from it."""
    for name in shipped_jobs():
        assert conforms(yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())), name
    for data in SCHEMA_REFUSES:
        assert not conforms(data), data
        with pytest.raises(JobError):
            parse_job(data)


OWN = ("name: mail\nturns:\n  - calls: [{id: M, tool: send_email, args: {to: [a@b.c], urgent: true, "
       "meta: {n: 1.5, x: null}}}]\n  - answer: sent\n")


def test_a_call_may_be_any_tool_a_program_has_with_any_json_arguments(tmp_path):
    """A program's tools are its own: a job plays them to it as the model's reply, whatever their names."""
    job = load_job(write(tmp_path, OWN))
    (call,) = job.calls
    assert (call.tool, call.args) == ("send_email", {"to": ["a@b.c"], "urgent": True, "meta": {"n": 1.5, "x": None}})
    assert job.own_tools == ("send_email",) and not call.changes and call.ref is None
    assert conforms(yaml.safe_load(OWN))


def test_crashlabs_own_loops_refuse_a_job_of_a_programs_tools_in_one_line(cli, tmp_path):
    path = write(tmp_path, OWN)
    code, out, err = cli("sweep", "--job", str(path), "--depth", "1")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert f"{path}: it calls 'send_email', a tool of a program's own, which only a program (--command) runs: " in err


def test_crashlab_schema_prints_the_json_schema(cli):
    code, out, _ = cli("schema")
    schema = json.loads(out)
    assert code == 0 and schema["$schema"].startswith("https://json-schema.org/")
    call = schema["$defs"]["CreateIssue"]
    assert call["properties"]["id"]["pattern"] == f"^{ID_GRAMMAR}$"
    assert schema["$defs"]["CreateIssueArgs"]["properties"]["title"]["maxLength"] == TEXT_LIMITS["title"]


def test_a_shipped_job_by_name_is_the_file_in_scenarios_byte_for_byte(cli):
    """scenarios/ holds the shipped jobs as files to open and copy; the name runs the same bytes from anywhere."""
    for name in shipped_jobs():
        assert find_job(name).sha256 == find_job(str(SCENARIOS / f"{name}.yaml")).sha256 != ""
    by_name, by_path = cli("sweep", "--loop", "agent", "--job", "approval"), cli("sweep", "--loop", "agent", "--job",
                                                                               "scenarios/approval.yaml")
    assert by_name[0] == 0 and by_name == by_path
