"""The job YAML contract: the triage job loads; anything else names the file, the place and the problem."""

import pytest

from crashlab.job import JobError, load_job


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
        (f"name: x\nturns:\n  - calls: [{{id: A, tool: delete_repo, args: {{}}}}]\n  - answer: a\n",
         "turn 1 call 1", "unknown tool 'delete_repo' (valid: create_issue, comment, search)"),
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
