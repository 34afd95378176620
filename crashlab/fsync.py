"""What makes a name in a directory durable: the one system call the store, the tracker's creation and `crashlab
run` all need, below all of them."""

from __future__ import annotations

import os
from pathlib import Path


def sync_directory(path: Path) -> None:
    """Make `path`'s entries durable: a name made, renamed or removed in it survives a power cut only after this."""
    directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
