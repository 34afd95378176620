"""crashlab: crash-test an agent's tool-calling loop at every point it can die.

`crashlab.point(label)` marks a crash point, in crashlab's own loops and in yours; a sweep crashes
the loop at each one. Outside a sweep a point does nothing and costs a global lookup, so the marks
can stay in production code.
"""

from __future__ import annotations

from crashlab.protocols.points import point

__all__ = ["point"]


def __getattr__(name: str) -> str:
    """`__version__`, read from the installed metadata only when asked: importing crashlab stays fast."""
    if name != "__version__":
        raise AttributeError(f"module 'crashlab' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crashlab")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
