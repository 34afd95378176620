"""Random small jobs in the YAML schema, for the properties that must hold on any job."""

from hypothesis import strategies as st

from crashlab.job import Job, parse_job


@st.composite
def jobs(draw, max_turns: int = 2, max_calls: int = 3, harder: bool = False) -> Job:
    """A job of up to `max_turns` replies of up to `max_calls` calls each, then the answer.

    Comments target an issue created earlier in the job or a fixed number; with `harder`, any call
    may also fail after the tracker accepted it, or wait for an approval.
    """
    created, turns, n = [], [], 0
    for _ in range(draw(st.integers(1, max_turns))):
        calls = []
        for _ in range(draw(st.integers(1, max_calls))):
            n += 1
            call = {"id": f"c{n}", "tool": draw(st.sampled_from(["create_issue", "comment", "search"]))}
            if call["tool"] == "create_issue":
                call["args"] = {"title": f"t{n}", "body": "b"}
                created.append(call["id"])
            elif call["tool"] == "comment":
                call["args"] = {"issue": draw(st.sampled_from([f"${c}" for c in created] + [1])), "body": "b"}
            else:
                call["args"] = {"query": "t"}
            if harder:
                call["fails_after_accept"] = draw(st.booleans())
                call["needs_approval"] = draw(st.booleans())
            calls.append(call)
        turns.append({"calls": calls})
    return parse_job({"name": "generated", "turns": [*turns, {"answer": "done"}]})
