"""A sweep's results on disk: every scenario, the table as JSON and CSV, and how they were made.

Results go into a directory whole or not at all: written beside it, then renamed into place. The
manifest names the exact job bytes and the software that swept them, and nothing that changes from
one run to the next (no date), so sweeping again into a committed results/ changes no file.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import crashlab
from crashlab.engine.tree import Row
from crashlab.errors import BadInput
from crashlab.job import Job
from crashlab.protocols.scenario import ScenarioResult
from crashlab.report.receipts import Receipts, encode
from crashlab.report.tables import Columns, to_csv, to_json
from crashlab.report.windows import windows

#: The files a results directory holds; manifest.json is written last, so it vouches for the others.
RESULT_FILES = ("scenarios.jsonl", "receipts.jsonl", "summary.json", "summary.csv", "manifest.json")


def scenario_record(result: ScenarioResult) -> dict[str, Any]:
    """One line of scenarios.jsonl."""
    o = result.outcome
    return {
        "id": result.id,
        "variant": result.variant,
        "crashes": list(result.crashes),
        "points": list(result.points),
        "dups": o.extra,
        "dup_calls": o.dups,
        "missing": len(o.missing),
        "wrong": len(o.wrong),
        "asks": o.asks,
        "approvals": o.approvals,
        "calls_plus": o.calls_plus,
    }


class ResultsError(BadInput):
    """An --out that cannot hold results; the message names it and why."""


class PendingResults:
    """Results on their way to `out`: checked and begun before the sweep, put in place after it.

    The files are written into a fresh hidden directory, so a sweep that fails or is stopped leaves
    nothing half-written. A new `out` is made beside it, and appears complete in one rename; an
    existing directory (which may hold other files, such as a golden table, and may be a mount or a
    symlink to another file system) holds the hidden directory itself, and each result file is
    renamed from it over its old copy, manifest.json last: a rename never crosses a file system.
    The hidden directory's name holds the process's ID, so one that a killed sweep left behind is
    recognised, and removed, by the next sweep into the same place.
    """

    def __init__(self, out: str | Path):
        if str(out).strip() == "":
            raise ResultsError("--out needs a directory name (got an empty one)")
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise ResultsError(f"cannot write results to {out}: it exists and is not a directory")
        parent = self.out.absolute().parent
        blocker = next((p for p in (parent, *parent.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise ResultsError(f"cannot write results to {out}: {blocker} is not a directory")
        place = self.out if self.out.is_dir() else parent
        prefix = f".{self.out.absolute().name}.{os.getpid()}."
        try:
            parent.mkdir(parents=True, exist_ok=True)
            remove_stale(place, self.out.absolute().name)
            self.temp = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=place))
        except OSError as error:
            raise ResultsError(f"cannot write results to {out}: {error.strerror}") from None

    def commit(self, job: Job, rows: Sequence[Row], scenarios: Iterable[ScenarioResult], columns: Columns,
               receipts: Receipts) -> None:
        self.put(lambda into: write_results(into, job, rows, scenarios, columns, receipts), RESULT_FILES)

    def put(self, write: Callable[[Path], None], names: Sequence[str]) -> None:
        """Write the files `names` with `write` into the hidden directory, then put them in place."""
        try:
            write(self.temp)
            if not self.out.exists():
                self.temp.chmod(0o777 & ~umask())  # as mkdir would have made it, not mkdtemp's 0700
                os.rename(self.temp, self.out)
                return
            for name in names:
                os.replace(self.temp / name, self.out / name)
        except OSError as error:
            raise ResultsError(f"cannot write results to {self.out}: {error.strerror}") from None
        finally:
            self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.temp, ignore_errors=True)


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def alive(pid: int) -> bool:
    """Whether a process `pid` runs (as far as this process can tell: another user's counts as alive). A sweep's
    results are made beside their directory, which one machine's processes write, not in a shared scratch space."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(place: Path, name: str) -> None:
    """Remove the hidden directories (or files) that sweeps into `name`, since killed, left in `place`."""
    for stale in place.glob(f".{glob.escape(name)}.*.tmp"):
        pid = stale.name[len(name) + 2:].partition(".")[0]
        if pid.isdigit() and not alive(int(pid)):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            else:
                stale.unlink(missing_ok=True)


def write_results(out: Path, job: Job, rows: Sequence[Row], scenarios: Iterable[ScenarioResult],
                  columns: Columns, receipts: Receipts) -> None:
    """The sweep on disk: every scenario, a receipt per window that failed or asked, the table as JSON and CSV, and
    how it was made. The scenarios are read once, as they stream: each is written as its window grows."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "scenarios.jsonl", "w", encoding="utf-8") as file:

        def written() -> Iterator[ScenarioResult]:
            for result in scenarios:
                file.write(json.dumps(scenario_record(result)) + "\n")
                yield result

        found = windows(written(), asked=True)
    with open(out / "receipts.jsonl", "wb") as receipts_file:
        for window in found:
            receipts_file.write(encode(receipts.of(window)) + b"\n")
    (out / "summary.json").write_text(to_json(rows, columns) + "\n", encoding="utf-8")
    (out / "summary.csv").write_text(to_csv(rows, columns), encoding="utf-8")
    (out / "manifest.json").write_text(json.dumps(manifest(job), indent=2) + "\n", encoding="utf-8")


def manifest(job: Job) -> dict[str, Any]:
    """How the results were made: the exact job bytes that were swept, and the software that swept them."""
    return {
        "crashlab": crashlab.__version__,
        "job": job.source,
        "job_sha256": job.sha256,
        "command": shlex.join(["crashlab", *sys.argv[1:]]),
        "python": sys.version.split()[0],
        "dependencies": dependency_versions(),
        "machine": machine(),
    }


def machine() -> dict[str, Any]:
    """The machine the figures were measured on, as far as it stays the same from one run to the next: a
    time or a load is not here, so sweeping again on the same machine still changes no file."""
    return {"system": platform.system(), "kernel": platform.release(), "arch": platform.machine(),
            "cpus": os.cpu_count() or 0}


def dependency_versions() -> dict[str, str]:
    """The installed version of each of crashlab's own requirements (its extras left out)."""
    from importlib import metadata

    try:
        required = metadata.requires("crashlab") or []
    except metadata.PackageNotFoundError:
        return {}
    versions = {}
    for requirement in required:
        if "extra ==" in requirement:
            continue
        name = re.split(r"[^A-Za-z0-9._-]", requirement, maxsplit=1)[0]
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
