"""crashlab: crash-test an agent's tool-calling loop at every point it can die.

`crashlab.point(label)` marks a crash point in a loop crashlab did not write; `crashlab.api.sweep`
kills that loop at each one for real. Outside a sweep a point does nothing and costs a global
lookup, so the marks can stay in production code.
"""

from __future__ import annotations

from typing import Any

#: The recorder of a process that `crashlab.api.sweep` forked; None everywhere else.
_recorder: Any = None


def point(label: str) -> None:
    """A crash point: in a sweep, the process may be killed here (SIGKILL); elsewhere, nothing happens."""
    if _recorder is not None:
        _recorder.hit(label)


def __getattr__(name: str) -> str:
    """`__version__`, read from the installed metadata only when asked: importing crashlab stays fast."""
    if name != "__version__":
        raise AttributeError(f"module 'crashlab' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crashlab")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
