"""A user's value as a message shows it: short, on one line, and named by what it is when it is not text."""

from __future__ import annotations

import datetime
from typing import Any


def shown(value: Any) -> str:
    """A user's value in a message: short, on one line, never walked if it is a collection."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        text = ascii(value)
        return text if len(text) <= 40 else text[:36] + "…" + text[-1]
    return kind(value)


def kind(value: Any) -> str:
    """What a YAML value is, as a person names it: the type errors say what was found."""
    if value is None:
        return "null"
    for types, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
                        (list, "a list"), (dict, "a mapping"), (bytes, "binary data"), (set, "a set"),
                        (datetime.datetime, "a date and time"), (datetime.date, "a date")):
        if isinstance(value, types):
            return name
    return type(value).__name__
