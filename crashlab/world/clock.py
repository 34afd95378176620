"""The world's time: a process takes none, a restart's downtime all there is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Clock:
    """Hours since the scenario began. Every part of the world that keeps time reads this one."""

    hours: float = 0.0
