"""crashlab's pytest plugin: a `crash_sweep` fixture that kills a function of yours at every crash point.

Registered through the ``pytest11`` entry point, so any project that installs crashlab has it:

    def test_my_loop_never_files_twice(crash_sweep):
        result = crash_sweep(my_loop, ["A", "B", "C"], depth=2)
        assert result.dups == 0 and result.missing == 0, "\\n".join(result.failures())
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the plugin loads with every pytest run: the sweep only when a test asks for it
    from crashlab.api import Entry, Sweep


@pytest.fixture
def crash_sweep():
    """`crashlab.api.sweep`: call it with your entry point and its intended effects; it returns a `Sweep`."""
    from crashlab.api import sweep

    def run(entry: Entry, effects: list[str], **options) -> Sweep:
        return sweep(entry, effects, **options)

    return run
