"""Hostile surroundings of a sweep: every surface refuses, in one line, what it cannot vouch for.

A scheduler that is not one, a sweep too big to finish, a signal, a full disk, a closed pipe, an
--out on another file system, effects the API cannot count: each is refused or handled before it
costs a traceback, a hang or the whole sweep. Whatever might hang runs as a real process with a
timeout, so a regression fails its test instead of the test run.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT
from .test_hostile_input import assert_refused, run

# -- --scheduler: anything but a Dask scheduler is refused within the connect timeout --------------


def answer(kind: str, connection: socket.socket) -> None:
    """What a server that is no Dask scheduler does with a connection: nothing, HTTP, garbage, or echo it, until
    the client, having refused it, hangs up (a reset, if it left unread what the server sent)."""
    with contextlib.suppress(ConnectionResetError, BrokenPipeError):
        if kind == "garbage":
            connection.sendall(bytes(range(256)) * 4)
        while kind != "silent" and (data := connection.recv(65536)):
            connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" if kind == "http" else data)


def serve(kind: str, server: socket.socket) -> None:
    held = []  # a silent server holds its connections open
    while True:
        try:
            connection, _ = server.accept()
        except OSError:
            return
        held.append(connection)
        threading.Thread(target=answer, args=(kind, connection), daemon=True).start()


@pytest.fixture
def impostor(request) -> Iterator[str]:
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=serve, args=(request.param, server), daemon=True).start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.mark.parametrize(
    ("impostor", "message"),
    [("silent", "accepts connections but gave no Dask answer within 5 s"),
     ("http", "answered, but not as a Dask scheduler"),
     ("garbage", "answered, but not as a Dask scheduler"),
     ("echo", "answered, but not as a Dask scheduler")],
    indirect=["impostor"],
)
def test_a_scheduler_that_is_no_dask_scheduler_is_refused_within_the_timeout(impostor, message):
    pytest.importorskip("distributed")
    code, out, err, _ = run("sweep", "--variant", "keys", "--job", "read-only", "--scheduler", impostor, timeout=60)
    assert_refused(code, out, err, f"'{impostor}'", message)


@pytest.mark.parametrize("impostor", ["silent"], indirect=True)
def test_a_campaign_sent_to_a_silent_listener_is_refused_too(impostor):
    pytest.importorskip("distributed")
    code, out, err, _ = run("campaign", "--jobs", "2", "--scheduler", impostor, timeout=60)
    assert_refused(code, out, err, f"'{impostor}' accepts connections but gave no Dask answer")


@pytest.mark.parametrize(
    ("address", "message"),
    [("tcp://127.0.0.1:9", "cannot reach the Dask scheduler 'tcp://127.0.0.1:9': Connection refused"),
     ("127.0.0.1:8786", "a Dask scheduler's address is tcp://HOST:PORT"),
     ("tcp://127.0.0.1:99999", "a Dask scheduler's address is tcp://HOST:PORT"),
     ("tcp://host:port", "a Dask scheduler's address is tcp://HOST:PORT")],
)
def test_a_scheduler_address_that_is_none_is_named(address, message):
    pytest.importorskip("distributed")
    code, out, err, _ = run("sweep", "--variant", "keys", "--job", "read-only", "--scheduler", address, timeout=60)
    assert_refused(code, out, err, message)


# -- signals: a sweep on a pool of workers stops at once, and leaves no worker behind ---------------

def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def as_from_a_terminal() -> Iterator[None]:
    """SIGINT, for a process started in the block, as a terminal gives it: a test suite run as a background job
    (``make test &``, a CI runner's shell) ignores SIGINT, and a sweep would inherit that. A signal this
    process handles is the default again in a program it starts; one it ignores stays ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def busy_pool() -> tuple[subprocess.Popen[str], list[int]]:
    """A sweep of real processes on two workers, once each worker is at work (it has a process of its own): every
    scenario re-executed, so that it is still at work when a test stops it."""
    with as_from_a_terminal():
        process = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--kill", "--variant", "keys", "--depth",
                                    "3", "--workers", "2", "--no-share"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        workers = children(process.pid)
        if len(workers) >= 2 and all(children(w) for w in workers):
            return process, workers
        time.sleep(0.05)
    process.kill()
    pytest.fail("the workers never began")


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_sweep_on_workers_at_once_and_ends_them(signum):
    process, workers = busy_pool()
    process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=10)  # it was 75 s: the pool let the work in flight finish
    finally:
        process.kill()
    assert process.returncode == 128 + signum and "Traceback" not in err and "Exception" not in err, err
    assert not [w for w in workers if alive(w)]


def pid_of(item: int) -> int:
    return os.getpid()


def test_an_interrupt_as_the_pool_shuts_down_stops_its_workers(monkeypatch):
    """A Ctrl-C as a sweep's pool shut down, its work done, left a worker waiting for more: the exit waited on it
    forever (1 in 90 Ctrl-Cs in the first half second of `crashlab sweep --variant keys`)."""
    from concurrent.futures import ProcessPoolExecutor

    from crashlab.engine.parallel import on_pool

    real = ProcessPoolExecutor.shutdown

    def interrupted(self, wait: bool = True, **options) -> None:
        if wait:
            raise KeyboardInterrupt
        real(self, wait=wait, **options)

    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", interrupted)
    workers: set[int] = set()
    try:
        with pytest.raises(KeyboardInterrupt):
            on_pool(2)(pid_of, [1, 2, 3, 4], workers.add)
        assert workers and not [w for w in workers if alive(w)]
    finally:
        for worker in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGKILL)


#: crashlab started as `python -m crashlab` or as the `crashlab` script does it, with a Ctrl-C as it imports MODULE.
INTERRUPTED = """
import os, signal, sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
sys.argv = ["crashlab", "sweep", "--variant", "keys"]
{start}
"""
STARTS = {"python -m crashlab": "import runpy; runpy.run_module('crashlab', run_name='__main__', alter_sys=True)",
          "the crashlab script": "from crashlab.__main__ import main; sys.exit(main())"}


@pytest.mark.parametrize("start", list(STARTS))
@pytest.mark.parametrize("module", ["crashlab.errors", "click", "crashlab.cli.sweep", "crashlab.protocols.points"])
def test_ctrl_c_while_crashlab_imports_is_one_line(start, module):
    """A Ctrl-C in the first half second, as crashlab imports: a KeyboardInterrupt traceback through the imports."""
    with as_from_a_terminal():
        done = subprocess.run([sys.executable, "-c", INTERRUPTED.format(module=module, start=STARTS[start])], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (128 + signal.SIGINT, "", "\naborted\n")  # ends ^C's line


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_workers_die_with_their_sweep_when_it_is_killed():
    process, workers = busy_pool()
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10  # they lived on for 60 s
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if alive(w)]


# -- where the output and the scratch files go: full, closed --------------------------------------

@pytest.mark.parametrize("args", [("sweep", "--variant", "keys", "--job", "read-only"), ("points", "keys"), ("jobs",),
                                  ("explain", "keys:3"), ("sweep", "--list", "dups", "--variant", "keys"), ("--help",)])
def test_an_output_that_cannot_be_written_is_one_line(args):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "crashlab", *args], cwd=ROOT, stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, "crashlab: error: cannot write the output: No space left on device\n")


def test_a_reader_that_goes_away_stops_the_sweep_quietly():
    """`crashlab sweep --list calls | head -1`: the rest has nowhere to go, and that is no error to report."""
    process = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--list", "calls", "--depth", "3",
                                "--variant", "per-turn", "--format", "json"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()
    err = process.stderr.read()
    process.wait(timeout=60)
    assert err == b"" and process.returncode in (0, 1)  # click's choice, by when the pipe closed: no traceback


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="mounts a tmpfs: needs root")
@pytest.mark.parametrize("args", [("--store", "files", "--workers", "1"), ("--store", "files", "--workers", "2"),
                                  ("--kill", "--workers", "1"), ("--kill", "--workers", "2")])
def test_a_full_scratch_space_is_one_line(args):
    """/dev/shm full (a 4 KiB tmpfs over it, in a mount namespace of the test's own)."""
    command = shlex.join([sys.executable, "-m", "crashlab", "sweep", "--variant", "keys", *args])
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=4k tmpfs /dev/shm && exec {command}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert_refused(done.returncode, done.stdout, done.stderr, "no space left for the sweep's scratch files")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="mounts a tmpfs: needs root")
def test_workers_that_kept_their_runners_open_leave_no_scratch_behind():
    """A worker keeps its runner (its run directories, its service) from unit to unit, and closes it as it ends:
    after a sweep of a served loop on two workers, /dev/shm (a tmpfs of the test's own) is as empty as before."""
    command = shlex.join([sys.executable, "-m", "crashlab", "sweep", "--loop", "examples/http_loop.py:keyed",
                          "--effects", "examples/http_loop.yaml", "--kill", "--depth", "1", "--workers", "2"])
    done = subprocess.run(["unshare", "-m", "sh", "-c",
                           f"mount -t tmpfs tmpfs /dev/shm && {command} > /dev/null && ls -A /dev/shm"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


@pytest.fixture
def elsewhere(tmp_path) -> Iterator[Path]:
    """A directory on another file system than tmp_path's (/dev/shm), removed afterwards."""
    other = Path(tempfile.mkdtemp(prefix="crashlab-test-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    if other.stat().st_dev == tmp_path.stat().st_dev:
        shutil.rmtree(other)
        pytest.skip("no second file system")
    yield other
    shutil.rmtree(other)


def test_results_go_through_a_symlink_to_another_file_system(cli, tmp_path, elsewhere):
    """It failed after the whole sweep: "Invalid cross-device link"."""
    (tmp_path / "results").symlink_to(elsewhere)
    code, _, err = cli("sweep", "--variant", "keys", "--job", "read-only", "--out", str(tmp_path / "results"))
    assert code == 0, err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["manifest.json", "receipts.jsonl", "scenarios.jsonl",
                                                           "summary.csv", "summary.json"]


def test_a_results_directory_is_made_as_mkdir_makes_one(cli, tmp_path):
    mask = os.umask(0o022)
    try:
        assert cli("sweep", "--variant", "keys", "--job", "read-only", "--out", str(tmp_path / "r"))[0] == 0
    finally:
        os.umask(mask)
    assert (tmp_path / "r").stat().st_mode & 0o777 == 0o755  # it was 0700, mkdtemp's


def test_what_a_killed_sweep_left_is_removed_by_the_next(cli, tmp_path):
    """A SIGKILLed sweep leaves its hidden directory: the next sweep into the same place removes it."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    beside, mine = tmp_path / f".r.{dead.pid}.abc.tmp", tmp_path / f".r.{os.getpid()}.abc.tmp"
    beside.mkdir()
    mine.mkdir()  # a sweep still running: not touched
    assert cli("sweep", "--variant", "keys", "--job", "read-only", "--out", str(tmp_path / "r"))[0] == 0
    assert not beside.exists() and mine.exists()
    inside = tmp_path / "r" / f".r.{dead.pid}.abc.tmp"  # into an existing directory, it was written within
    inside.mkdir()
    assert cli("sweep", "--variant", "keys", "--job", "read-only", "--out", str(tmp_path / "r"))[0] == 0
    assert not inside.exists()


def test_the_scratch_a_killed_sweep_left_is_removed_by_the_next():
    """A SIGKILLed sweep cannot remove its stores, run directories and services' databases: the next sweep
    removes each scratch directory whose maker is dead, and no other."""
    from crashlab.scratch import SCRATCH, scratch

    process = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--kill", "--variant", "keys",
                                "--workers", "1", "--no-share"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    place = SCRATCH or Path(tempfile.gettempdir())
    deadline, left = time.monotonic() + 30, []
    while not left and time.monotonic() < deadline:  # until it has made its run directories
        left = list(place.glob(f"crashlab-*-pid{process.pid}-*"))
        time.sleep(0.05)
    process.kill()
    process.wait()
    assert left and all(d.is_dir() for d in left)
    living = scratch("probe")  # this process's, alive: kept
    assert cli_sweep() == 0
    assert not any(d.exists() for d in left) and living.is_dir()
    shutil.rmtree(living)


#: A sweep in another PID namespace, as this one sees it: it makes its scratch directory, which it holds while it
#: lives, named for a PID that is dead here (or alive: it says nothing either way), and says where it is.
ELSEWHERE = """
import os, sys, time
from pathlib import Path
from crashlab.scratch import scratch

made = scratch("loop")
(made / "world.sqlite").write_bytes(b"its work")
named = made.with_name(f"crashlab-loop-pid{sys.argv[1]}-elsewhere")
made.rename(named)  # the lock is the directory's, whatever its name
print(named, flush=True)
time.sleep(60)
"""


def dead_pid() -> int:
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


@pytest.mark.parametrize("named_for", ["a dead process", "a living one"])
def test_scratch_held_by_a_sweep_elsewhere_is_kept_and_removed_once_it_ends(named_for):
    """Clean-up decided by PID: a sweep in another PID namespace sharing /dev/shm deleted a running sweep's files,
    named for a PID dead in its own. Only a directory whose lock no process holds is stale, whatever its name says."""
    from crashlab.scratch import remove, scratch

    pid = dead_pid() if named_for == "a dead process" else os.getpid()
    other = subprocess.Popen([sys.executable, "-c", ELSEWHERE, str(pid)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        theirs = Path(other.stdout.readline().strip())
        remove(scratch("probe"))  # this sweep's clean-up, as it makes a directory
        assert (theirs / "world.sqlite").read_bytes() == b"its work"
    finally:
        other.kill()
        other.wait()
    remove(scratch("probe"))  # its maker gone, however it died: nothing holds it
    assert not theirs.exists()


def cli_sweep() -> int:
    return subprocess.run([sys.executable, "-m", "crashlab", "sweep", "--variant", "keys", "--job", "read-only",
                           "--store", "files"], cwd=ROOT, capture_output=True, timeout=60).returncode


def test_plot_makes_no_tree_of_folders_and_leaves_no_empty_picture(tmp_path):
    code, out, err, _ = run("plot", "--variant", "keys", "--job", "read-only", "--out", str(tmp_path / "a/b/c.png"))
    assert_refused(code, out, err, f"no directory {tmp_path / 'a'} to make b/ in")
    assert not (tmp_path / "a").exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="mounts a tmpfs: needs root")
def test_a_picture_that_does_not_fit_leaves_nothing(tmp_path):
    pytest.importorskip("matplotlib")
    command = shlex.join([sys.executable, "-m", "crashlab", "plot", "--variant", "keys", "--job", "read-only",
                          "--out", "full/sweep.png"])
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mkdir full && mount -t tmpfs -o size=4k tmpfs full && "
                           f"{command}; status=$?; ls -A full; exit $status"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ,
                                                                                          "PYTHONPATH": str(ROOT)})
    assert_refused(done.returncode, done.stdout, done.stderr, "cannot write the picture to full/sweep.png: No space")


# -- the API and the fixture: effects it cannot count, an entry it cannot send ---------------------

def hand_written():
    """examples/hand_written_loop.py, importable by name (so a worker could unpickle its function)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hand_written_loop", ROOT / "examples" / "hand_written_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["hand_written_loop"] = module
    return module


@pytest.mark.parametrize(
    ("effects", "message"),
    [([], "a non-empty list of effect names"),
     ((), "a non-empty list of effect names"),
     ({}, "no effect: a loop is swept against what it means to do"),
     ("issue", "not the string 'issue'"),
     (["A", ""], "a non-empty list of effect names"),
     ({"A": "issue"}, "say what it is, {issue: TITLE} or {comment: EFFECT}"),
     (["A"], "it made records for B, C, which is no intended effect"),
     (["A", "B"], "it made records for C, which is no intended effect"),
     (["A", "A", "B", "C"], "effects names A twice: each effect is made once, so name each once")],
    ids=["empty list", "empty tuple", "empty mapping", "a string", "a blank name", "a string as what", "two unlisted",
         "one unlisted", "one named twice"],
)
def test_effects_the_fixture_cannot_count_are_refused_in_one_line(crash_sweep, effects, message):
    """It reported 0 duplicates for a loop that made 4, given no effects; it split "issue" into letters."""
    from functools import partial

    from crashlab.errors import BadInput

    with pytest.raises(BadInput) as refused:
        crash_sweep(partial(hand_written().triage, keyed=False), effects, name="plain", depth=1)
    assert message in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("entry", [None, "triage", 42], ids=["None", "a name", "a number"])
def test_an_entry_that_is_no_function_is_refused_before_any_process_runs(crash_sweep, entry):
    """It was caught only inside the forked child, as its first process failed: "'str' object is not callable"."""
    from crashlab.errors import BadInput

    with pytest.raises(BadInput, match=r"^the loop's entry is a function, entry\(run\) or entry\(\), not "):
        crash_sweep(entry, ["A", "B", "C"], depth=1)


def test_an_entry_a_worker_cannot_be_sent_is_refused_before_the_sweep(crash_sweep):
    """A lambda with workers=2 was a raw PicklingError from inside the pool."""
    from crashlab.errors import BadInput

    triage = hand_written().triage
    with pytest.raises(BadInput, match=r"^the loop's entry cannot be sent to a worker process: .*; pass workers=1 or "
                                       r"define it at module level$"):
        crash_sweep(lambda run: triage(run, keyed=False), ["A", "B", "C"], workers=2, depth=1)


# -- unbounded work: refused up front with an estimate, or done a batch at a time ------------------

@pytest.mark.parametrize("args", [("--depth", "8", "--fault", "all"), ("--depth", "8", "--fault", "wrong-answer"),
                                  ("--depth", "8", "--kill", "--variant", "keys")])
def test_a_sweep_too_big_to_finish_is_refused_with_an_estimate(args):
    """`sweep --depth 8 --fault all` never finished: wrong-answer walks 875,927,248 scenarios."""
    code, out, err, _ = run("sweep", *args, timeout=60)
    assert_refused(code, out, err, " to depth 8 is about ", " scenarios or more", "more than --max-scenarios "
                   "10,000,000 (pass a larger one to go on, or a smaller --depth)")


def test_max_scenarios_refuses_a_sweep_estimated_past_it_before_it_grows(cli):
    """The depth-2 sweep of keys holds 688 scenarios; its estimate, 629, errs low, so as not to refuse a sweep
    within the bound."""
    assert_refused(*cli("sweep", "--variant", "keys", "--max-scenarios", "600"),
                   "keys to depth 2 is about 629 scenarios or more", "more than --max-scenarios 600")


def test_max_scenarios_stops_a_sweep_that_grows_past_it_though_its_estimate_did_not(cli):
    code, out, err = cli("sweep", "--variant", "keys", "--max-scenarios", "650")
    assert_refused(code, out, err, "the sweep grew past --max-scenarios 650 (", "against an estimate of 629 before "
                   "it grew): pass a larger one to go on, or a smaller --depth")


def test_a_sweep_within_max_scenarios_runs(cli):
    code, out, _ = cli("sweep", "--variant", "keys", "--max-scenarios", "688")
    assert code == 0 and "idempotency keys" in out


def test_a_campaign_of_a_million_jobs_makes_them_as_it_goes(monkeypatch):
    """`campaign --jobs 1000000` made every job before sweeping one (MemoryError)."""
    from crashlab.check import campaign

    made, spec_of = [], campaign.spec_of

    def counted(seed, k):
        made.append(k)
        return spec_of(seed, k)

    monkeypatch.setattr(campaign, "spec_of", counted)

    class Enough(Exception):
        pass

    def stop(verdict):
        raise Enough

    with pytest.raises(Enough):
        campaign.campaign(1_000_000, 0, 1, done=stop)
    assert len(made) <= campaign.BATCH
