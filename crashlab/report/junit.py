"""A sweep as JUnit XML, the report CI servers read: a failing variant is a failing test, named.

GitHub Actions (through a test-report action), GitLab and Jenkins show a JUnit file's failed test
cases by name, with their message and text. Each variant is a test suite; its first test case is the
variant itself, and one more follows per intended effect, so a CI page says "after-reply: A" failed,
not only that something did. A case fails with its windows, one line each, each with the command
that replays it. The elements and attributes are those of the Ant JUnit schema that these servers
read, the required ones always present.
"""

from __future__ import annotations

import platform
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from crashlab.engine.tree import Row
from crashlab.report.windows import Window, describe


def effects_of(window: Window) -> set[str]:
    """The effects a window's harm touches (none for a stuck run, stray records, or a flaky run alone)."""
    o = window.members[0].outcome
    return {*o.dups, *o.missing, *o.wrong}


def junit(rows: Sequence[Row], found: Sequence[Window], effects: Mapping[str, Sequence[str]],
          replay: Callable[[str], str], seconds: float, when: datetime) -> str:
    """The JUnit XML of a sweep: `found` its failure windows, `effects` each variant's intended effects.

    The sweep is timed as a whole (its scenarios interleave across workers), so the time goes on
    `testsuites` and each suite's; the cases' is 0.
    """
    suites = ET.Element("testsuites", name="crashlab sweep")
    total = failed = 0
    for k, row in enumerate(rows):
        mine = [w for w in found if w.members[0].variant == row.variant]
        cases = [(row.variant, mine)] + [(f"{row.variant}: {effect}", [w for w in mine if effect in effects_of(w)])
                                         for effect in effects.get(row.variant, ())]
        suite = ET.SubElement(suites, "testsuite", name=f"{row.variant} ({row.name}), {row.faults}", id=str(k),
                              package="crashlab", timestamp=when.strftime("%Y-%m-%dT%H:%M:%S"),
                              hostname=platform.node() or "localhost", tests=str(len(cases)),
                              failures=str(sum(1 for _, ws in cases if ws)), errors="0", skipped="0",
                              time=f"{seconds:.3f}")
        ET.SubElement(suite, "properties")
        for name, windows in cases:
            case = ET.SubElement(suite, "testcase", name=name, classname=f"crashlab.{row.variant}", time="0")
            if windows:
                scenarios = sum(w.scenarios for w in windows)
                failure = ET.SubElement(case, "failure", type="crashlab.window",
                                        message=f"{len(windows)} failure window{'s' if len(windows) != 1 else ''} "
                                                f"({scenarios} scenario{'s' if scenarios != 1 else ''}): "
                                                f"{windows[0].failure}")
                failure.text = "\n".join(describe(w, replay) for w in windows)
        ET.SubElement(suite, "system-out")
        ET.SubElement(suite, "system-err")
        total += len(cases)
        failed += int(suite.get("failures", "0"))
    suites.set("tests", str(total))
    suites.set("failures", str(failed))
    suites.set("errors", "0")
    suites.set("time", f"{seconds:.3f}")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
