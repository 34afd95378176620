"""Effects by what they are: each record of the service is the effect it is, or an orphan."""

import pytest

from crashlab.errors import BadInput
from crashlab.world import Record
from crashlab.world.effects import Effect, attribute, effects_of

EFFECTS = effects_of({"A": {"issue": "Login fails"}, "B": {"issue": "Export times out"},
                      "C": {"comment": "A"}, "D": {"comment": "B", "body": "first"},
                      "E": {"comment": "B", "body": "second"}})


def issue(number: int, title: str) -> Record:
    return Record("issue", number, "", None, None, f"{title}\n")


def comment(number: int, on: int, body: str) -> Record:
    return Record("comment", number, "", None, on, body)


def tags(records: list[Record]) -> list[str]:
    return [r.call for r in attribute(records, EFFECTS)]


def test_an_issue_is_the_effect_whose_title_it_has():
    assert tags([issue(1, "Export times out"), issue(2, "Login fails")]) == ["B", "A"]


def test_a_duplicate_issue_is_the_same_effect_again():
    assert tags([issue(1, "Login fails"), issue(2, "Login fails")]) == ["A", "A"]


def test_a_comment_is_the_effect_on_whose_issue_it_lands_even_a_duplicates():
    records = [issue(1, "Login fails"), issue(2, "Login fails"), comment(1, 2, "same")]
    assert tags(records) == ["A", "A", "C"]


def test_comments_on_one_issue_are_told_apart_by_their_body():
    records = [issue(1, "Export times out"), comment(1, 1, "the second one"), comment(2, 1, "the first one")]
    assert tags(records) == ["B", "E", "D"]


def test_a_record_no_effect_accounts_for_is_an_orphan_named_by_what_it_is():
    records = [issue(1, "Login fail"), comment(1, 1, "x"), comment(2, 9, "y")]
    assert tags(records) == ["issue 'Login fail'", "comment #1 on issue #1", "comment #2 on issue #9"]


def test_a_comment_on_the_wrong_issue_is_an_orphan():
    records = [issue(1, "Login fails"), issue(2, "Export times out"), comment(1, 2, "no body named")]
    assert tags(records)[2] == "comment #1 on issue #2"


def test_effects_read_as_written():
    assert EFFECTS[0] == Effect("A", title="Login fails")
    assert EFFECTS[3] == Effect("D", on="B", body="first")
    assert str(EFFECTS[3]) == "D (a comment on B's issue saying 'first')"


@pytest.mark.parametrize("spec, says", [
    (["A"], "a mapping of effect names"),
    ({}, "no effect"),
    ({"A": "Login fails"}, "say what it is"),
    ({"A": {"issue": "x", "comment": "A"}}, "exactly one of issue"),
    ({"A": {}}, "exactly one of issue"),
    ({"A": {"title": "x"}}, "unknown field 'title'"),
    ({"A": {"issue": 3}}, "issue is a non-empty string"),
    ({"A": {"issue": ""}}, "issue is a non-empty string"),
    ({"A": {"issue": "x", "body": "y"}}, "body belongs to a comment"),
    ({"C": {"comment": "A"}}, "C comments on 'A', which is no issue effect"),
    ({"A": {"issue": "x"}, "C": {"comment": "C"}}, "which is no issue effect"),
    ({"A": {"issue": "x"}, "B": {"issue": "x"}}, "A and B would leave the same record"),
    ({"A": {"issue": "x"}, "C": {"comment": "A"}, "D": {"comment": "A"}}, "C and D would leave the same record"),
    ({3: {"issue": "x"}}, "an effect's name is a non-empty string"),
])
def test_effects_that_cannot_be_told_apart_or_found_are_refused_in_one_line(spec, says):
    with pytest.raises(BadInput, match=says) as refused:
        effects_of(spec)
    assert "\n" not in str(refused.value)


def test_a_jobs_changing_calls_are_effects_by_what_each_makes(triage):
    from crashlab.world.effects import of_job

    assert of_job(triage) == (
        Effect("A", title="Login fails on Safari"),
        Effect("B", title="Export times out"),
        Effect("C", on="A", body="Same root cause as the session-cookie bug; see search."),
    )


def test_a_job_whose_comment_names_a_literal_issue_cannot_be_recognised_at_the_service():
    from crashlab.job import Call, Job, Turn
    from crashlab.world.effects import of_job

    job = Job("j", "j-1", (Turn((Call("A", "create_issue", {"title": "x", "body": ""}),
                                 Call("C", "comment", {"issue": 1, "body": "y"}))), Turn(answer="done")))
    with pytest.raises(BadInput, match="call C comments on issue 1: against the service a comment names its issue"):
        of_job(job)
