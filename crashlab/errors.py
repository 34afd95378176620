"""Everything crashlab refuses or fails at, in one hierarchy, each class with its exit code.

Modelled on click's own exceptions: whoever raises one says what went wrong in one line, and the
command line prints that line and exits with the class's code. Nothing else decides an exit code.
"""

from __future__ import annotations


class CrashlabError(Exception):
    """Something crashlab cannot do; its message is one line that names the problem."""

    exit_code = 1
    prefix = "error"


class BadInput(CrashlabError, ValueError):
    """What the user gave cannot be used: a job, a scenario ID, an option, a file or directory."""

    exit_code = 2


class JobError(BadInput):
    """A job that cannot be run; the message names the file, the place and the problem."""


class CheckFailed(CrashlabError):
    """A check the user asked for did not hold: a golden table differs, a promise broke."""

    exit_code = 1


class HarnessError(CrashlabError):
    """A scenario that cannot be counted: the loop did something a real death or run would not allow.

    It names the scenario and, where it can, the line of the loop that broke the rule: a table built
    from such a scenario would be a table of fiction.
    """

    exit_code = 3
    prefix = "harness error"


class Stray(HarnessError):
    """A process that did not repeat the run it repeats, up to its crash: the loop is not deterministic.

    A sweep of crashlab's own loops fails on it; a sweep of yours may count the scenario as flaky.
    """


class Flaky(HarnessError):
    """A sweep with flaky scenarios: their repeats disagreed, or a process strayed from the run it repeats.

    Its table is printed, each flaky scenario counted by the worst it came to, and then the sweep fails
    with a harness error's code, as a stray does: what a flaky scenario comes to is the luck of a race,
    not a count of the loop's design, and a script must not read a table of luck as a verdict (1, a
    check that did not hold, says the counts are sound and wrong).
    """


class OutputGone(CrashlabError):
    """Whoever read the output (or the crash points a run echoes on stderr) went away, and a write found its pipe
    closed: nothing more can be said where no one reads, so the command line ends without a word, with the code a
    death by SIGPIPE gives (128 + 13), as it gives 130 for Ctrl-C. A run stopped so resumes when run again; 1 would
    say a check did not hold."""

    exit_code = 141
