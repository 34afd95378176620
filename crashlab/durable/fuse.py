"""A file-system layer under a run directory that a power cut can hit, for every file a process touches.

`crashlab.durable.disk` models crashlab's own checkpoint file in memory; a framework's files
(SQLite databases with their journals, WALs and ``-shm``) it cannot see. This layer can: it is a
FUSE passthrough mounted over the run directory, as LazyFS is, so every file operation of every
process passes through it, and at a cut it leaves the backing directory as a power cut would.

Why FUSE, not syscall recording (ALICE's approach). A recorder sees the syscalls and must replay
their effects on a copy, including those done through ``mmap`` (SQLite's ``-shm``), which no
syscall shows; a file system sees what reaches the file, however it got there, and needs nothing
of the process: no ``strace``, no ``LD_PRELOAD``, no knowledge of the framework. The cost is a
round trip per operation, small beside a process's start.

The persistence model, deliberately POSIX's minimum (what survives a cut; the rest may be lost):

- a file's data is durable as of its last ``fsync``/``fdatasync`` (or each write, for a file
  opened ``O_SYNC``/``O_DSYNC``);
- a directory's entries (a create, a rename, an unlink, a ``mkdir``) are durable as of its last
  ``fsync``. A rename is one operation, as the kernel makes it: a sync of either directory makes it
  durable in both, so a file renamed across directories comes back under one name, never two;
- ``sync(2)`` and ``syncfs(2)`` make everything durable, as on Linux. FUSE never tells a file system
  of them (the kernel sends ``FUSE_SYNCFS`` to virtiofs alone, and libfuse 3 has no operation for
  it), so the harness catches them in the loop's processes (`crashlab.runners.syncs`) and says so to
  the layer (`Layer.sync`).

Of what no sync made durable, a cut may keep any part, and the layer explores a bounded few
(`Image.cuts`): the disk takes the operations in the order they were made, so a cut keeps those
before some moment, and of the later ones only what syncs made durable. The first state is all of
them (what a process crash leaves), the last none (the worst case: every file never synced
empty, every name never synced gone, LazyFS's "clear cache"), and between them the newest losses,
at most `MOST` states in all. Real file systems keep more than the worst: ext4 commits every
namespace operation before a later ``fsync`` of anything. (LazyFS applies namespace operations at
once, and so never loses a rename or an unlink.) What it cannot do is reorder: a state where a later
write reached the disk and an earlier one did not (ext4's writeback does that, page by page) is
not explored.

How: every operation passes to the backing directory at once, and the layer keeps, in memory, the
`Image`: what the backing held at the mount, and the log of every operation since, each marked when
a sync made it durable (what every state keeps is folded into the base: the log's durable head, and
each file's synced writes). The harness asks the layer, while it serves, how many states a cut would
now leave, and tells it of the loop's ``sync``, down a line of their own (`Layer.asks`), which a thread
of the layer's process answers, never through the mount: at a point of its own (below) the layer's one
FUSE thread holds the operation and waits for the harness, so a question sent through the mount would
wait behind it, and the harness on the question (a sweep of ``--fs-points`` under ``--fault power-cut``
hung so). The image is all the two threads share, and one at a time uses it. A cut unmounts the
layer (so the kernel's caches, dirty ``mmap`` pages included, are flushed into it first and gone
after), then rewrites the backing directory as the chosen state says. Links, symbolic links and
device files are refused (ENOSYS); modes and times are not modelled.

The layer runs in a process forked from this one, so a loop's process, killed with its group, never
takes it along. Only this module knows FUSE, and it imports the binding (``mfusepy``, the extra
``crashlab[fuse]``) only in that process.

The same layer finds a program's crash points from outside (`tells`): every operation that changes
what a death or a cut leaves (``fsync``, ``fdatasync``, a directory's ``fsync``, ``rename``,
``unlink``, and the ``close`` of a handle written since it was opened or last closed) is told to the
harness down a line (`Layer.line`, framed as the service's control line is), by what it is and the
path it acts on (``{"kind": "point", "label": "fsync:progress.tmp"}``), and held until the harness's
word: go on, and it is done; gone (the harness killed the process there), and it is not, for nobody
waits for it. The process stands in its system call meanwhile, exactly at the point, and no other
operation passes (the layer serves one at a time). An operation of a process that is exiting is no
point (a death closes what its process had open, and that close is the death's, not a step), nor is
one of the harness's own.
"""

from __future__ import annotations

import errno
import functools
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from crashlab.errors import HarnessError
from crashlab.scratch import release, scratch
from crashlab.service import control

#: How long a mount or an unmount may take, in seconds, before the harness gives up on the layer.
WAIT = 10.0
#: What the parent tells the layer's process once it is unmounted: cut (to the state whose number follows, in 4
#: bytes), or leave the directory as it is.
CUT, KEEP = b"c", b"k"
#: What the harness asks the layer while it serves (`Layer.asks`): the loop called ``sync`` (or ``syncfs``), which
#: FUSE does not pass on; how many states a cut would now leave.
SYNC, STATES = {"ask": "sync"}, {"ask": "states"}

#: A directory's durable entries: each name, the inode it names and whether that is a directory.
Entries = dict[str, tuple[int, bool]]
#: A directory's durable contents, as a cut writes them: each name, a file's bytes or a directory's tree.
Tree = dict[str, "bytes | Tree"]
#: Tells the harness of an operation about to change what a death leaves, by its label (``rename:a->b``), and
#: waits for its word: True, go on and do it; False, its process is dead, so do nothing.
Teller = Callable[[str], bool]
#: A task's flag, in /proc/PID/stat, while it exits (``PF_EXITING``): the closes of a process that is dying.
PF_EXITING = 0x4


class LayerError(HarnessError):
    """The layer could not be mounted, or unmounted, or FUSE is not usable here."""


def unusable() -> str | None:
    """Why the layer cannot run on this machine (no /dev/fuse, no fusermount3, no binding), or None."""
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is missing or not usable"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (Debian: apt-get install fuse3)"
    try:
        import mfusepy  # noqa: F401  (it loads libfuse as it is imported)
    except (ImportError, OSError) as error:
        return f"the FUSE binding does not load (pip install 'crashlab[fuse]', and libfuse3): {error}"
    return None


#: At most this many states of a death are explored (`Image.cuts`): the crash's, the newest losses, and the most.
MOST = 8
#: How many ways to cut the log `Image.cuts` tries before it settles for the states it has found.
TRIED = 64


@dataclass
class Op:
    """One operation the layer passed to the backing directory, as a cut may keep or lose it."""

    kind: str  # "write", "truncate", "link" (a create or mkdir), "unlink" (or rmdir), "rename"
    obj: int  # the file or directory it changes (the one renamed, for a rename)
    dirs: tuple[int, ...] = ()  # the directories whose entries it changes: a rename's source and target
    names: tuple[str, ...] = ()  # the names in them, in that order
    is_dir: bool = False
    offset: int = 0  # a write's offset, a truncate's length
    data: bytes = b""
    durable: bool = False  # a sync made it durable: every state keeps it
    seq: int = 0  # its place in the order the operations were made, by which a cut keeps those before it

    def apply(self, files: dict[int, bytearray], dirs: dict[int, Entries]) -> None:
        if self.kind == "write":
            content = files.setdefault(self.obj, bytearray())
            if len(content) < self.offset:
                content.extend(bytes(self.offset - len(content)))
            content[self.offset:self.offset + len(self.data)] = self.data
        elif self.kind == "truncate":
            content = files.setdefault(self.obj, bytearray())
            del content[self.offset:]
            content.extend(bytes(self.offset - len(content)))
        elif self.kind == "link":
            dirs.setdefault(self.dirs[0], {})[self.names[0]] = (self.obj, self.is_dir)
            if self.is_dir:
                dirs.setdefault(self.obj, {})
        else:  # an unlink, or a rename: the old name goes if it still names the object, and a rename's new one comes
            entries = dirs.setdefault(self.dirs[0], {})
            if entries.get(self.names[0], (None,))[0] == self.obj:
                del entries[self.names[0]]
            if self.kind == "rename":
                dirs.setdefault(self.dirs[1], {})[self.names[1]] = (self.obj, self.is_dir)

#: What a cut's state is made of, as two states are compared: each name, with a file's bytes or a directory's.
Frozen = tuple[tuple[str, "bytes | Frozen"], ...]
#: The operations that change a file's data, which a sync of the file makes durable.
DATA = ("write", "truncate")


P = ParamSpec("P")
R = TypeVar("R")


def _alone(method: Callable[Concatenate[Image, P], R]) -> Callable[Concatenate[Image, P], R]:
    """One thread at a time in the image: the layer's, serving the loop's operations, or the one answering the
    harness's questions (`answer`)."""
    @functools.wraps(method)
    def alone(image: Image, *args: P.args, **kwargs: P.kwargs) -> R:
        with image.lock:
            return method(image, *args, **kwargs)
    return alone


@dataclass
class Image:
    """What the disk holds under the model: the base every state keeps (what the backing directory held at the
    mount, and the durable head of the log), and the log of every operation since, by object (a file or a
    directory: an id of the layer's own, so that a reused inode number is a new object)."""

    root: int
    files: dict[int, bytearray] = field(default_factory=dict)
    dirs: dict[int, Entries] = field(default_factory=dict)
    log: list[Op] = field(default_factory=list)
    #: The ways to cut the log the last `cuts` found, newest first: what a state's number names. None keeps it all.
    marked: list[int | None] = field(default_factory=list)
    made: int = 0  # objects made: the next one's id
    recorded: int = 0  # operations recorded: the next one's place
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def of(cls, backing: Path) -> Image:
        """Everything in `backing` as durable: what a layer mounted over it starts from."""
        image = cls(0)
        image.read(backing, image.new_dir())
        return image

    def read(self, directory: Path, obj: int) -> None:
        for entry in sorted(directory.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                self.dirs[obj][entry.name] = (child := self.new_dir(), True)
                self.read(entry, child)
            else:
                self.dirs[obj][entry.name] = (child := self.new_file(), False)
                self.files[child] = bytearray(entry.read_bytes())

    def new_dir(self) -> int:
        obj = self.new_file()
        self.dirs[obj] = {}
        return obj

    @_alone
    def new_file(self) -> int:
        self.made += 1
        return self.made - 1

    @_alone
    def record(self, op: Op) -> None:
        op.seq, self.recorded = self.recorded, self.recorded + 1
        self.log.append(op)

    @_alone
    def sync(self, obj: int) -> None:
        """Make durable what a sync of `obj` does: a file's data, a directory's entries (a rename's in both of its
        directories), as they are now."""
        for op in self.log:
            if (op.obj == obj and op.kind in DATA) or obj in op.dirs:
                op.durable = True
        self.fold()

    @_alone
    def sync_all(self) -> None:
        """``sync(2)``, ``syncfs(2)``: everything is durable."""
        for op in self.log:
            op.durable = True
        self.fold()

    def fold(self) -> None:
        """Apply to the base what every state keeps: the log's durable head, and every durable write (a file's
        sync makes all its writes before it durable, so its content at the sync is in every state)."""
        kept: list[Op] = []
        for op in self.log:
            if op.durable and (op.kind in DATA or not kept):
                op.apply(self.files, self.dirs)
            else:
                kept.append(op)
        self.log = kept

    def state(self, cut: int | None) -> Tree:
        """The run directory as a cut leaves it: the operations made before the `cut`-th (all, if None) reached the
        disk, and of the later ones those a sync made durable."""
        files: dict[int, bytearray] = {}
        dirs = {obj: dict(entries) for obj, entries in self.dirs.items()}
        for op in self.log:
            if cut is None or op.seq < cut or op.durable:
                if op.kind in DATA and op.obj not in files:
                    files[op.obj] = bytearray(self.files.get(op.obj, b""))
                op.apply(files, dirs)
        return self.tree(self.root, files, dirs)

    def tree(self, obj: int, files: dict[int, bytearray], dirs: dict[int, Entries]) -> Tree:
        return {name: self.tree(child, files, dirs) if is_dir else bytes(files.get(child, self.files.get(child, b"")))
                for name, (child, is_dir) in sorted(dirs.get(obj, {}).items())}

    @_alone
    def cuts(self) -> int:
        """How many distinct states a cut now admits, at most `MOST`, newest first: all the log (what a process crash
        leaves), then cut before each operation no sync made durable, the newest first, and last the most a cut can
        take (only what syncs made durable). Each is marked, for `restore` to find it by its number."""
        pending = [op.seq for op in reversed(self.log) if not op.durable]
        seen: dict[Frozen, int | None] = {}
        for cut in [None, *pending[:TRIED]]:
            if len(seen) == MOST - 1:
                break
            seen.setdefault(_frozen(self.state(cut)), cut)
        seen.setdefault(_frozen(self.state(0)), 0)
        self.marked = list(seen.values())
        return len(self.marked)

    @_alone
    def restore(self, backing: Path, state: int | None = None) -> None:
        """Rewrite `backing` as the `state`-th state `cuts` marked says (None: the most a cut can take, only what syncs
        made durable): what a power cut leaves on the disk."""
        tree = self.state(0 if state is None else self.marked[state - 1])
        for entry in backing.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        _write(backing, tree)


def _frozen(tree: Tree) -> Frozen:
    return tuple((name, content if isinstance(content, bytes) else _frozen(content)) for name, content in tree.items())


def _write(directory: Path, tree: Tree) -> None:
    for name, content in tree.items():
        if isinstance(content, bytes):
            (directory / name).write_bytes(content)
        else:
            (directory / name).mkdir()
            _write(directory / name, content)


def _refused(*_: Any) -> int:
    raise OSError(errno.ENOSYS, "the power-cut layer does not model links or device files")


class Passthrough:
    """The layer's FUSE operations: each passes to the backing directory at once, and is recorded in `image`, with
    what each sync made durable. Every method takes the path inside the mount (``/graph.sqlite``).

    It keeps its own view of the names in the mount (`live`: each directory's entries, by object), so that each
    operation names the object it changes, whatever name it has by the time of a cut."""

    use_ns = True  # times in nanoseconds, as mfusepy asks

    def __init__(self, backing: Path, ready: Callable[[], None] = lambda: None, tell: Teller | None = None):
        self.backing = backing
        self.image = Image.of(backing)
        self.live = {obj: dict(entries) for obj, entries in self.image.dirs.items()}
        self.ready = ready
        self.tell = tell
        self.handles: dict[int, int] = {}  # each open file's or directory's object
        self.synced: set[int] = set()  # handles opened O_SYNC or O_DSYNC: every write is durable
        self.written: set[int] = set()  # handles written since they were opened or last closed
        self.names: dict[int, str] = {}  # each open handle's path, for an operation FUSE passes without one

    def real(self, path: str) -> str:
        return str(self.backing) + path

    def held(self, operation: str, *paths: str | None) -> None:
        """Tell the harness that `operation` on `paths` is about to happen, and wait for its word; if its process
        died there, fail it (EIO, to nobody) undone. A point only where a process of the program asks for it."""
        if self.tell is None or not programs(_requester()):
            return
        label = f"{operation}:" + "->".join(_shown(path) for path in paths)
        if not self.tell(label):
            raise OSError(errno.EIO, f"{label}: its process died here")

    def lookup(self, path: str) -> tuple[int, bool]:
        """The object `path` names now, and whether it is a directory."""
        found = (self.image.root, True)
        for name in filter(None, path.split("/")):
            found = self.live[found[0]][name]
        return found

    def parent(self, path: str) -> tuple[int, str]:
        head, _, name = path.rpartition("/")
        return self.lookup(head)[0], name

    def init(self, path: str) -> None:
        self.ready()

    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        st = os.fstat(fh) if fh is not None else os.lstat(self.real(path or "/"))
        return {key: getattr(st, key) for key in ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_blocks")} \
            | {"st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}

    def access(self, path: str, amode: int) -> None:
        if not os.access(self.real(path), amode):
            raise OSError(errno.EACCES, path)

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.real(path))
        return {key: getattr(st, key) for key in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail",
                                                   "f_files", "f_ffree", "f_favail", "f_flag", "f_namemax")}

    def getxattr(self, path: str, name: str, position: int = 0) -> bytes:
        return os.getxattr(self.real(path), name, follow_symlinks=False)

    def listxattr(self, path: str) -> list[str]:
        return os.listxattr(self.real(path), follow_symlinks=False)

    def opendir(self, path: str) -> int:
        fh = os.open(self.real(path), os.O_RDONLY | os.O_DIRECTORY)
        self.handles[fh] = self.lookup(path)[0]
        return fh

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self.real(path))]

    def releasedir(self, path: str | None, fh: int) -> None:
        self.handles.pop(fh, None)
        os.close(fh)

    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> None:
        self.held("fsync", path)
        self.image.sync(self.handles[fh])

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(self.real(path), mode)
        self.live[obj := self.image.new_file()] = {}
        self._linked(path, obj, True)

    def _linked(self, path: str, obj: int, is_dir: bool) -> None:
        parent, name = self.parent(path)
        self.live[parent][name] = (obj, is_dir)
        self.image.record(Op("link", obj, (parent,), (name,), is_dir))

    def rmdir(self, path: str) -> None:
        os.rmdir(self.real(path))
        self._unlinked(path)

    def unlink(self, path: str) -> None:
        self.held("unlink", path)
        os.unlink(self.real(path))
        self._unlinked(path)

    def _unlinked(self, path: str) -> None:
        parent, name = self.parent(path)
        obj, is_dir = self.live[parent].pop(name)
        self.image.record(Op("unlink", obj, (parent,), (name,), is_dir))

    def rename(self, old: str, new: str) -> None:
        self.held("rename", old, new)
        os.rename(self.real(old), self.real(new))
        (source, was), (target, now) = self.parent(old), self.parent(new)
        obj, is_dir = self.live[source].pop(was)
        self.live[target][now] = (obj, is_dir)
        self.image.record(Op("rename", obj, (source, target), (was, now), is_dir))

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self.real(path), mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        os.chown(self.real(path), uid, gid)

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> None:
        if times is None:
            os.utime(self.real(path))
        else:
            os.utime(self.real(path), ns=times)

    def open(self, path: str, flags: int) -> int:
        return self._opened(os.open(self.real(path), flags), self.lookup(path)[0], flags, path)

    def create(self, path: str, mode: int, flags: int) -> int:
        parent, name = self.parent(path)
        known = self.live[parent].get(name)
        fh = os.open(self.real(path), flags | os.O_CREAT, mode)
        if known is None:
            self._linked(path, obj := self.image.new_file(), False)
            return self._opened(fh, obj, flags & ~os.O_TRUNC, path)
        return self._opened(fh, known[0], flags, path)

    def _opened(self, fh: int, obj: int, flags: int, path: str) -> int:
        self.handles[fh] = obj
        if flags & os.O_TRUNC:
            self.image.record(Op("truncate", obj))
        if flags & (os.O_SYNC | os.O_DSYNC):
            self.synced.add(fh)
        self.names[fh] = path
        return fh

    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        written = os.pwrite(fh, data, offset)
        self.written.add(fh)
        self.image.record(Op("write", self.handles[fh], offset=offset, data=bytes(data[:written])))
        if fh in self.synced:
            self._sync(fh)
        return written

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> None:
        os.truncate(fh if fh is not None else self.real(path or "/"), length)
        obj = self.handles[fh] if fh is not None else self.lookup(path or "/")[0]
        self.image.record(Op("truncate", obj, offset=length))

    def flush(self, path: str | None, fh: int) -> None:
        """A close's flush: nothing is made durable by it, but the close after a write is a point of the program's
        (its file written whole, say, before the rename that makes it its progress)."""
        if fh in self.written:
            self.written.discard(fh)
            self.held("close", path or self.names.get(fh))

    def fsync(self, path: str | None, datasync: int, fh: int) -> None:
        """The file's content is durable from here on: every write to it so far is in every state a cut leaves."""
        self.held("fdatasync" if datasync else "fsync", path or self.names.get(fh))
        self._sync(fh)

    def _sync(self, fh: int) -> None:
        self.image.sync(self.handles[fh])

    def release(self, path: str | None, fh: int) -> None:
        self.synced.discard(fh)
        self.written.discard(fh)
        self.names.pop(fh, None)
        self.handles.pop(fh, None)
        os.close(fh)

    link = symlink = mknod = _refused


def _shown(path: str | None) -> str:
    """A path inside the mount as a point names it: relative to the run directory, which is ``.``."""
    return (path or "?").lstrip("/") or "."


def _requester() -> int:
    """The thread whose system call the layer is serving."""
    import mfusepy

    return mfusepy.fuse_get_context()[2]


def programs(tid: int) -> bool:
    """Whether the thread `tid` is the program's, acting: not the harness's (the layer's parent, which copies and
    reads the directory), and not exiting (or gone), for the closes of a dying process are its death's, not a step
    of its program."""
    try:
        fields = Path(f"/proc/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        process = next(int(line.split()[1]) for line in Path(f"/proc/{tid}/status").read_text().splitlines()
                       if line.startswith("Tgid:"))
    except (OSError, IndexError, StopIteration, ValueError):
        return False
    return process != os.getppid() and not int(fields[6]) & PF_EXITING


@dataclass
class Layer:
    """The layer mounted at `mountpoint` over `backing`, served by a process forked from this one."""

    backing: Path
    mountpoint: Path
    tells: bool = False  # whether it tells the harness each operation a death can fall at (`line`)
    pid: int = 0
    told: int = -1  # the pipe down which the parent tells the layer's process what to do once unmounted
    hears: int = -1  # the pipe up which it says it is mounted, and then done
    #: The harness's end of the line down which the layer tells each point and waits for the word: a new one at
    #: each mount (a cut mounts again), None unless it `tells`.
    line: socket.socket | None = None
    #: The harness's end of the line on which it asks the layer's process (`SYNC`, `STATES`), a thread of which
    #: answers while the mount serves: a new one at each mount, None while none is mounted.
    asks: socket.socket | None = None
    #: One question at a time on `asks`: the sweep's, at a point, and a loop's ``sync``, on the thread that hears it.
    asking: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    @contextmanager
    def over(cls, backing: Path, tells: bool = False) -> Iterator[Layer]:
        """The layer over `backing`, mounted at a fresh directory of its own; unmounted (and the directory
        removed) when done, whatever happens, and the backing directory left as it then is. With `tells`, it
        tells the harness each operation a death can fall at, down `line`."""
        # Held as a scratch directory is, by this process and the layer's (which inherits the lock): one a sweep
        # killed by SIGKILL leaves, its layer's process gone too, the next one removes.
        layer = cls(backing, scratch("layer", Path(tempfile.gettempdir())), tells)
        try:
            layer.mount()
            yield layer
        finally:
            try:
                with suppress(LayerError):
                    layer.unmount(KEEP)
                layer.mountpoint.rmdir()
            finally:
                release(layer.mountpoint)

    def mount(self) -> None:
        """Fork the layer's process and wait until the mount serves."""
        import mfusepy  # noqa: F401  (here, once: each process forked from this one finds it loaded)

        told, self.told = os.pipe()
        self.hears, says = os.pipe()
        self.line, theirs = socket.socketpair() if self.tells else (None, None)
        self.asks, answers = socket.socketpair()
        self.pid = os.fork()
        if self.pid == 0:  # the layer's process: it never returns from here
            status = 1
            try:
                os.setpgid(0, 0)  # no kill of a loop's group, no interrupt at the terminal, takes it
                os.close(self.told)
                os.close(self.hears)
                self.asks.close()
                if self.line is not None:
                    self.line.close()
                serve(self.backing, self.mountpoint, told, says, answers, theirs)
                status = 0
            finally:
                os._exit(status)
        os.close(told)
        os.close(says)
        answers.close()
        if theirs is not None:
            theirs.close()
        if self._heard() != b"r":
            self._reap()
            raise LayerError(f"the power-cut layer could not mount {self.mountpoint}")

    def sync(self) -> None:
        """The loop called ``sync(2)`` or ``syncfs(2)``: everything is durable from here on."""
        self._ask(SYNC)

    def states(self) -> int:
        """How many states a cut now would leave (the first a process crash's, the last the most it can take)."""
        return int(self._ask(STATES)["states"])

    def _ask(self, question: dict[str, str]) -> dict[str, Any]:
        """The layer's answer to `question`, on `asks`: never through the mount, where it would wait behind an
        operation the layer holds at its point. `control.LineBroken` (an `OSError`) if no layer is mounted, or it
        gives no answer in `WAIT` seconds."""
        with self.asking:
            if self.asks is None:
                raise control.LineBroken(f"no layer is mounted at {self.mountpoint}")
            control.send(self.asks, question)
            try:
                return control.receive(self.asks, time.monotonic() + WAIT)
            except TimeoutError:
                raise control.LineBroken(f"the power-cut layer at {self.mountpoint} gave no answer in {WAIT:g} s"
                                         ) from None

    def cut(self, state: int | None = None) -> list[str]:
        """The power cut: unmount, leave in the backing directory the `state`-th state the last `states` counted
        (None: only what syncs made durable), and mount again for the restart; what it took back, file by file.
        Every process that used the mount must be dead by now."""
        before = _files(self.backing)
        self.unmount(CUT + (state or 0).to_bytes(4, "big"))
        after = _files(self.backing)
        self.mount()
        return [f"{name} {_lost(before.get(name), after.get(name))}" for name in sorted(before.keys() | after.keys())
                if before.get(name) != after.get(name)]

    def unmount(self, then: bytes) -> None:
        """Unmount, after which the layer's process cuts (`CUT`) or leaves the directory (`KEEP`), and ends."""
        if not self.pid:
            return
        _tell(self.told, then)
        deadline = time.monotonic() + WAIT
        while subprocess.run(["fusermount3", "-u", "-q", str(self.mountpoint)], check=False).returncode:
            if time.monotonic() > deadline:  # still busy: detach it, and the process ends once it is free
                subprocess.run(["fusermount3", "-u", "-z", "-q", str(self.mountpoint)], check=False)
                break
            time.sleep(0.01)
        done = self._heard()
        self._reap()
        if done != b"d":
            raise LayerError(f"the power-cut layer at {self.mountpoint} did not end as told")

    def _heard(self) -> bytes:
        """One byte from the layer's process, or b"" if it ended or did not answer in time."""
        if not select.select([self.hears], [], [], WAIT)[0]:
            return b""
        return os.read(self.hears, 1)

    def _reap(self) -> None:
        """Wait for the layer's process to end; one that did not end as told is killed."""
        with suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        for fd in (self.told, self.hears):
            os.close(fd)
        if self.line is not None:
            self.line.close()
            self.line = None
        with self.asking:  # a question under way has its answer, or a broken line, as the layer's process ended
            if self.asks is not None:
                self.asks.close()
                self.asks = None
        self.pid = 0


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _lost(before: bytes | None, after: bytes | None) -> str:
    """What a cut did to one file, as a person reads it."""
    if before is None:
        return "is back (its unlink or rename never reached the disk)"
    if after is None:
        return "is gone (its name never reached the disk)"
    return f"lost its latest writes ({len(before):,} bytes, now {len(after):,})"


def serve(backing: Path, mountpoint: Path, told: int, says: int, answers: socket.socket,
          line: socket.socket | None = None) -> None:
    """The layer's process: serve the mount until it is unmounted, then do as told, and say so, and meanwhile answer
    the harness's questions on `answers`, on a thread of their own; with a `line`, tell each point down it and wait
    for the harness's word."""
    import mfusepy

    _die_with_parent()
    quiet = os.open(os.devnull, os.O_WRONLY)  # fusermount3's watcher, which `auto_unmount` starts, says
    os.dup2(quiet, 2)  # "not mounted" when it ends after an unmount: the pipe says how the process ended
    operations = Passthrough(backing, ready=lambda: _tell(says, b"r"),
                             tell=(lambda label: _asked(line, label)) if line is not None else None)
    threading.Thread(target=_answering, args=(operations.image, answers), name="crashlab-layer-answers",
                     daemon=True).start()
    mfusepy.FUSE(operations, str(mountpoint), foreground=True, nothreads=True, hard_remove=True,
                 auto_unmount=True, fsname="crashlab-power-cut")
    if os.read(told, 1) == CUT:
        operations.image.restore(backing, int.from_bytes(os.read(told, 4), "big") or None)
    _tell(says, b"d")


def answer(image: Image, question: dict[str, Any]) -> dict[str, Any]:
    """The layer's answer to the harness's `question`: `SYNC` (the loop called ``sync`` or ``syncfs``: everything is
    durable), or else `STATES` (how many states a cut now admits)."""
    if question == SYNC:
        image.sync_all()
        return {"synced": True}
    return {"states": image.cuts()}


def _answering(image: Image, answers: socket.socket) -> None:
    """Answer the harness's questions until it closes the line (or the layer's process ends)."""
    with suppress(control.LineBroken, OSError):
        while True:
            control.send(answers, answer(image, control.receive(answers)))


def _die_with_parent() -> None:
    """Have the kernel kill this process if the harness dies, so that `auto_unmount` unmounts it."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _asked(line: socket.socket, label: str) -> bool:
    """Tell the harness the point `label` and wait for its word: whether the operation goes on. A harness gone
    (the line broken) waits for nothing: the operation goes on, as it would with no harness."""
    try:
        control.send(line, {"kind": "point", "label": label})
        return control.receive(line) != control.GONE
    except (control.LineBroken, OSError):
        return True


def _tell(fd: int, data: bytes) -> None:
    os.write(fd, data)
