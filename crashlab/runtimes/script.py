"""What every runtime's scripted model shares: a job's call, as the model writes it in its reply."""

from __future__ import annotations

from typing import Any


def resolved(args: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments with ``$ID`` replaced by that call's result, the issue number it made, as a model
    reads it from the conversation: a number, or its text (JSON-quoted, where the runtime keeps tool output
    as JSON)."""
    return {name: int(str(results[value[1:]]).strip('"')) if isinstance(value, str) and value.startswith("$")
            else value for name, value in args.items()}
