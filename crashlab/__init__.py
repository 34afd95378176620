"""crashlab: crash-test an agent's tool-calling loop at every point it can die.

`crashlab.point(label)` marks a crash point, in crashlab's own loops and in yours; a sweep crashes
the loop at each one. Outside a sweep a point does nothing and costs a global lookup, so the marks
can stay in production code.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing's, without importing typing: this package imports nothing
if TYPE_CHECKING:
    from typing import Any

    from crashlab.protocols.points import point

__all__ = ["point"]


def __getattr__(name: str) -> Any:
    """`point`, imported when it is first asked for, and kept: importing the package imports nothing, so the
    command line's entry point (`crashlab.__main__`) runs before any of crashlab's imports, and a Ctrl-C in them is
    its one line. `__version__`, read from the installed metadata only when asked."""
    if name == "point":
        from crashlab.protocols.points import point

        globals()["point"] = point  # found in the module from now on: a point costs a global lookup
        return point
    if name != "__version__":
        raise AttributeError(f"module 'crashlab' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crashlab")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
