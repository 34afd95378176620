"""Random small jobs in the YAML schema, for the properties that must hold on any job.

The jobs come from `crashlab.job.generate`, the generator `crashlab campaign` uses too; Hypothesis
supplies its random numbers, so a failing job is found again and shrunk towards a simpler one.
"""

from hypothesis import strategies as st

from crashlab.job import Job, parse_job
from crashlab.job.generate import job_spec


def jobs(max_turns: int = 2, max_calls: int = 3, harder: bool = False) -> st.SearchStrategy[Job]:
    """A job of up to `max_turns` replies of up to `max_calls` calls each, then the answer (see `job_spec`)."""
    return st.randoms(use_true_random=False).map(lambda rng: parse_job(job_spec(rng, max_turns, max_calls, harder)))
