"""`crashlab.runners.syncs`: a loop's ``sync(2)`` and ``syncfs(2)``, which FUSE never passes on, reach the harness.

The program imports nothing of crashlab's: a static binary or a process in a session of its own is caught alike,
since the filter is the kernel's and every process the loop starts inherits it.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from crashlab.runners.syncs import CALLS, Syncs, catch

#: Calls sync(2), syncfs(2) on a descriptor in the run directory, and syncfs(2) on one elsewhere, writing a line to the
#: log before each call and after it.
PROGRAM = """
import ctypes, os, sys
run, elsewhere, log = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
def said(line):
    with open(log, "a") as file:
        file.write(line + "\\n")
here, there = os.open(run, os.O_RDONLY), os.open(elsewhere, os.O_RDONLY)
for call, do in (("sync", os.sync), ("syncfs here", lambda: libc.syncfs(here)), ("syncfs there", lambda: libc.syncfs(there))):
    said("calling " + call)
    do()
    said("returned " + call)
"""


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine not in CALLS, reason="seccomp's calls by number")
def test_a_process_s_sync_and_syncfs_of_the_run_directory_reach_the_harness_before_they_return(tmp_path: Path):
    run, elsewhere, log = tmp_path / "run", tmp_path / "elsewhere", tmp_path / "log"
    run.mkdir()
    elsewhere.mkdir()
    heard: list[list[str]] = []
    hears, catches = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            hears.close()
            catch(catches)
            os.execv(sys.executable, [sys.executable, "-c", PROGRAM, str(run), str(elsewhere), str(log)])
        finally:
            os._exit(127)
    catches.close()
    syncs = Syncs.heard(hears, lambda: heard.append(log.read_text().splitlines()), run)
    assert syncs is not None
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        syncs.close()
    assert os.waitstatus_to_exitcode(status) == 0
    assert heard == [["calling sync"],  # heard while the call waited, before it returned
                     ["calling sync", "returned sync", "calling syncfs here"]]  # and not the syncfs elsewhere
    assert log.read_text().splitlines()[-1] == "returned syncfs there"
