"""A program that cannot be stopped while it files its issues: a thread of it waits for a child it vfork'ed to exec.

glibc's ``posix_spawn`` vforks; the child here first opens a FIFO that no one writes, so it never execs, and
the thread that spawned it waits in the kernel, in a wait that a SIGSTOP does not end (only a SIGKILL
does). A process stops only once each of its threads has, so this one, asked to stop at a crash point,
never does. Meanwhile its main thread files two issues through the service at ``CRASHLAB_TRACKER_URL``.
It imports nothing but the standard library (``ctypes`` calls ``posix_spawn`` without holding the GIL,
which ``os.posix_spawn`` holds, and the main thread could not run).
"""

import ctypes
import os
import threading
import time
import urllib.request
from pathlib import Path

if not os.path.exists("fifo"):
    os.mkfifo("fifo")
libc = ctypes.CDLL(None)
actions = ctypes.create_string_buffer(256)  # a posix_spawn_file_actions_t (80 bytes here), and room to spare
libc.posix_spawn_file_actions_init(actions)
libc.posix_spawn_file_actions_addopen(actions, 0, b"fifo", os.O_RDONLY, 0)
argv, envp = (ctypes.c_char_p * 2)(b"true", None), (ctypes.c_char_p * 1)(None)
threading.Thread(target=libc.posix_spawn, args=(ctypes.byref(ctypes.c_int()), b"/bin/true", actions, None, argv, envp),
                 daemon=True).start()
while not any((task / "children").read_text() for task in Path("/proc/self/task").iterdir()):
    time.sleep(0.01)  # until the child is there, and the thread waits for it
for title in ("Login fails on Safari", "Export times out"):
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                     f'{{"title": "{title}", "body": ""}}'.encode(), {"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
