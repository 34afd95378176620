"""The scripted job: what the model replies, turn by turn, and what each tool call asks of the world."""

from crashlab.job.calls import CHANGING_TOOLS, TOOLS, Call, Job, Turn, intended
from crashlab.job.reader import JobError, find_job, load_job, parse_job, shipped_jobs, shown

__all__ = ["CHANGING_TOOLS", "TOOLS", "Call", "Job", "JobError", "Turn", "find_job", "intended", "load_job",
           "parse_job", "shipped_jobs", "shown"]
