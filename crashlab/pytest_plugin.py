"""crashlab's pytest plugin: a `crash_sweep` fixture that kills a function of yours at every crash point.

Registered through the ``pytest11`` entry point, so any project that installs crashlab has it:

    def test_my_loop_never_files_twice(crash_sweep):
        result = crash_sweep(my_loop, {"A": {"issue": "Login fails"}, "C": {"comment": "A"}}, depth=2)
        assert result.ok, result.report()

`result.record()` is the row `crashlab sweep --format json` prints; `result.report()` the counts and
each window of failures, with the call that replays it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the plugin loads with every pytest run: the sweep only when a test asks for it
    from crashlab.api import Effects, Entry, Swept


@pytest.fixture
def crash_sweep() -> Callable[..., Swept]:
    """`crashlab.api.sweep`: call it with your entry point and its intended effects; it returns what it swept."""
    from crashlab.api import sweep

    def run(entry: Entry, effects: Effects, **options: Any) -> Swept:
        return sweep(entry, effects, **options)

    return run
