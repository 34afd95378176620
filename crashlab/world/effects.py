"""Effects by what they are: an issue with this title, a comment on the issue another effect made.

A loop whose tools call a real service names no effect when it acts: it files an issue, as any
client would. So the intended effects are declared by what they leave in the service's records,
and the harness attributes each record to the effect it is: a duplicate is a second record one
effect accounts for, a missing effect has none, and a record no effect accounts for is an orphan.
A loop that tags its requests itself (``run.tracker.create_issue(effect, ...)``) is attributed by
its tags, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from crashlab.errors import BadInput
from crashlab.job import Job, shown
from crashlab.world import Record


@dataclass(frozen=True)
class Effect:
    """One thing the loop means to do exactly once: file the issue `title`, or comment on `on`'s issue."""

    name: str
    title: str | None = None  # an issue with exactly this title
    on: str | None = None  # a comment on the issue the effect `on` made
    body: str | None = None  # ... whose body holds this text: two comments on one issue tell apart by it

    @property
    def kind(self) -> str:
        return "issue" if self.title is not None else "comment"

    def __str__(self) -> str:
        if self.title is not None:
            return f"{self.name} (the issue {self.title!r})"
        said = f" saying {self.body!r}" if self.body is not None else ""
        return f"{self.name} (a comment on {self.on}'s issue{said})"


def effects_of(spec: Any, where: str = "effects") -> tuple[Effect, ...]:
    """Effects from their plain description, as a YAML file or a Python dict gives it::

        A: {issue: Login fails on Safari}
        C: {comment: A, body: Same root cause}

    Each is checked as the harness will use it: a bad one is refused in one line naming it.
    """
    if isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        raise BadInput(f"{where}: a mapping of effect names to what each is, e.g. "
                       "{A: {issue: Login fails}, C: {comment: A}}, not " + shown(str(spec)))
    if not items:
        raise BadInput(f"{where}: no effect: a loop is swept against what it means to do, once each")
    effects = []
    for name, what in items:
        if not isinstance(name, str) or not name.strip():
            raise BadInput(f"{where}: an effect's name is a non-empty string, not {shown(str(name))}")
        effects.append(_effect(name, what, f"{where}: {name}"))
    check(effects, where)
    return tuple(effects)


def _effect(name: str, what: Any, where: str) -> Effect:
    if not isinstance(what, Mapping):
        raise BadInput(f"{where}: say what it is, {{issue: TITLE}} or {{comment: EFFECT}}, not {shown(str(what))}")
    strange = sorted(set(map(str, what)) - {"issue", "comment", "body"})
    if strange:
        raise BadInput(f"{where}: unknown field {strange[0]!r} (valid: issue, comment, body)")
    if ("issue" in what) == ("comment" in what):
        raise BadInput(f"{where}: exactly one of issue (its title) or comment (the effect whose issue it is on)")
    for field, value in what.items():
        if not isinstance(value, str) or not value:
            raise BadInput(f"{where}: {field} is a non-empty string, not {shown(str(value))}")
    if "issue" in what:
        if "body" in what:
            raise BadInput(f"{where}: an issue is known by its title; body belongs to a comment")
        return Effect(name, title=what["issue"])
    return Effect(name, on=what["comment"], body=what.get("body"))


def check(effects: Iterable[Effect], where: str = "effects") -> None:
    """Refuse effects that could not be told apart, or a comment on an issue no effect files."""
    effects = list(effects)
    issues = {e.name: e for e in effects if e.kind == "issue"}
    seen: dict[object, str] = {}
    for effect in effects:
        if effect.on is not None and effect.on not in issues:
            raise BadInput(f"{where}: {effect.name} comments on {effect.on!r}, which is no issue effect "
                           f"(issue effects: {', '.join(issues) or 'none'})")
        same = (effect.title,) if effect.kind == "issue" else (effect.on, effect.body)
        if same in seen:
            raise BadInput(f"{where}: {seen[same]} and {effect.name} would leave the same record: a record "
                           "must tell which effect it is (give each comment on one issue its own body)")
        seen[same] = effect.name


def of_job(job: Job) -> tuple[Effect, ...]:
    """A job's changing calls by what each makes: the issue with its title, the comment with its body on the
    issue of the call it names (``issue: $A``). A comment on a literal issue number is no effect's."""
    effects = []
    for call in job.changing_calls:
        if call.tool == "create_issue":
            effects.append(Effect(call.id, title=str(call.args["title"])))
        elif call.ref is not None:
            effects.append(Effect(call.id, on=call.ref, body=str(call.args["body"])))
        else:
            raise BadInput(f"{job.source}: call {call.id} comments on issue {call.args.get('issue')!r}: against the "
                           "service a comment names its issue by the call that filed it ($A)")
    check(effects, job.source)
    return tuple(effects)


def attribute(records: Iterable[Record], effects: Iterable[Effect]) -> tuple[Record, ...]:
    """Each record tagged with the effect it is, or, if none accounts for it, with what it is: an orphan.

    An issue is the effect whose title it has. A comment is the effect it comments on the issue of
    (any issue that effect made, its duplicates too) and, where the effect names a body, says it.
    """
    records, effects = list(records), list(effects)
    by_title = {e.title: e.name for e in effects if e.title is not None}
    issue_of = {r.number: by_title.get(_title(r)) for r in records if r.kind == "issue"}
    tagged = []
    for r in records:
        if r.kind == "issue":
            name = issue_of[r.number]
        else:
            name = next((e.name for e in effects if e.on is not None and issue_of.get(r.issue or 0) == e.on
                         and (e.body is None or e.body in r.text)), None)
        tagged.append(replace(r, call=name or orphan(r)))
    return tuple(tagged)


def orphan(record: Record) -> str:
    """What a record no effect accounts for is, in the words a sweep reports it with."""
    if record.kind == "issue":
        return f"issue {_title(record)!r}"
    return f"comment #{record.number} on issue #{record.issue}"


def _title(record: Record) -> str:
    return record.text.partition("\n")[0]
