"""Random small jobs in the YAML schema, for the properties that must hold on any job."""

from hypothesis import strategies as st

from crashlab.job import Job, parse_job

TOOLS = st.sampled_from(["create_issue", "comment", "search"])
#: Call IDs as a user may write them: short, and unlike the triage job's one-letter ones.
CALL_IDS = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,6}", fullmatch=True)


@st.composite
def jobs(draw, max_turns: int = 2, max_calls: int = 3, harder: bool = False) -> Job:
    """A job of up to `max_turns` replies of up to `max_calls` calls each, then the answer.

    Comments target an issue created earlier in the job or a fixed number; with `harder`, any call
    may also fail after the tracker accepted it, or wait for an approval.
    """
    shape = draw(st.lists(st.lists(TOOLS, min_size=1, max_size=max_calls), min_size=1, max_size=max_turns))
    ids = iter(draw(st.lists(CALL_IDS, min_size=sum(map(len, shape)), max_size=sum(map(len, shape)), unique=True)))
    created, turns = [], []
    for tools in shape:
        calls = []
        for tool in tools:
            call = {"id": next(ids), "tool": tool}
            if tool == "create_issue":
                call["args"] = {"title": draw(st.sampled_from(["login", "crash", "login fails"])), "body": "b"}
                created.append(call["id"])
            elif tool == "comment":
                call["args"] = {"issue": draw(st.sampled_from([f"${c}" for c in created] + [1])), "body": "b"}
            else:
                call["args"] = {"query": draw(st.sampled_from(["login", "nothing"]))}
            if harder:
                call["fails_after_accept"] = draw(st.booleans())
                call["needs_approval"] = draw(st.booleans())
            calls.append(call)
        turns.append({"calls": calls})
    return parse_job({"name": "generated", "turns": [*turns, {"answer": "done"}]})
