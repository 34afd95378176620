"""The fault protocol: what can break beyond the chapter's crash, and how faults compose and are found.

A fault is a subclass of `Fault` that owns everything about itself: its setting, how it changes
the world's parts (a tracker that commits in two steps, a person who answers wrong, a model that
drifts, a longer wire), the states a death can leave under it, its part of a scenario ID, what it
needs from a runner, and what it does with a capability a runner offers (a page cache it can cut).
The engine and the runners know this protocol and never a fault by name; the faults themselves live
in `crashlab.faults`, a module each.

Faults are found through the entry-point group ``crashlab.faults`` (crashlab's own are declared in
its pyproject.toml), so a fault can live in any installed package::

    [project.entry-points."crashlab.faults"]
    my-fault = "my_package.faults:MyFault"

Faults compose, as a Jepsen test composes nemeses: `Faults` applies several to one sweep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache
from itertools import product
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from crashlab.errors import BadInput
from crashlab.profiles import DEFAULT
from crashlab.protocols.death import Death, Left
from crashlab.protocols.points import Event
from crashlab.world import Parts, WorldState

if TYPE_CHECKING:
    from crashlab.protocols.scenario import ScenarioResult, ScenarioRun, Setup

#: What a runner can offer a fault: the world in memory (its parts to swap, its state to restore from a
#: value); a model of the page cache
#: under the checkpoint store; snapshots of what each death leaves, to share restarts.
Capability = str
ENTRY_POINTS = "crashlab.faults"


class Swept(Protocol):
    """A sweep as a fault sees it: the sweep without the fault (to find what it varies over, as a wrong answer
    finds the questions asked), or with it (to say what it explored). The engine's `Swept` is one."""

    @property
    def setup(self) -> Setup: ...
    @property
    def first(self) -> ScenarioRun: ...  # the uninterrupted run
    @property
    def trees(self) -> Sequence[Any]: ...  # one per configuration of its faults

    def scenarios(self) -> Iterator[ScenarioResult]: ...


class Rerunning(Swept, Protocol):
    """The sweep without the faults that vary, which can run the loop once more, uninterrupted, under other faults:
    what a fault that searches (the orders of a loop's parallel calls) runs to find what it varies over."""

    def rerun(self, faults: Faults) -> ScenarioRun: ...


class PageCache(Protocol):
    """What a runner that runs processes for real can offer a fault: the page cache under the loop's run
    directory, which can be cut as a power cut would (`crashlab.durable.fuse.Layer`)."""

    def states(self) -> int:
        """How many states a cut now would leave, newest first: the first a process crash's, the last the most a
        cut can take (only what syncs made durable)."""
        ...

    def sync(self) -> None:
        """Make everything durable, as ``sync(2)`` does: the runner calls it for the loop, whose call the page
        cache cannot see."""
        ...

    def cut(self, state: int | None = None) -> list[str]:
        """Leave the `state`-th state the last `states` counted (None: the most a cut can take); what was taken
        back, as people read it."""
        ...


@dataclass(frozen=True)
class Machine:
    """The machine a process died on, as a runner offers it to the faults once the process and every
    process it started are dead: its page cache, where the runner keeps one, and the scenario's story."""

    page_cache: PageCache | None
    note: Callable[..., None]  # `Recorder.note`: an event of the fault's own, for the story
    #: Which of the states the page cache admits the death leaves (from 1, newest first), as the scenario's
    #: choice names it; None: the most a cut can take.
    state: int | None = None


@dataclass(frozen=True)
class Setting:
    """A setting a fault takes, as the command line offers it (``--sync file``)."""

    option: str  # the option's name, without dashes
    choices: tuple[str, ...]
    default: str
    help: str


@dataclass(frozen=True)
class Serving:
    """How crashlab's service runs in a sweep of a loop whose tools call it (`crashlab.service`).

    `commit` is how it makes a request durable (``one-txn``, ``two-step``, ``ack-first``), `steps`
    whether it passes its crash points between a commit's steps, and `dies` whether every death of
    the loop takes the service with it, which then restarts from what it committed. With
    `downtimes`, each death leaves one state per downtime (its choice, ``I~S``): the service's clock
    moves on by it before the restart. Its person answers question `wrong_at` wrong. With `late`, a
    death at its point ``sent`` leaves the request on the wire, and each point of the restart where it
    may land is a state (its choice, ``I~K``), open-ended as the restart's points are. With `cuts`, the
    loop's machine loses power at each death, and its run directory keeps one of the states its page
    cache admits where it died (its choice, ``I~S``). `model_ids` is how the job's model it plays to a
    program names its calls again. It keeps `profile`'s idempotency contract (`crashlab.profiles`), and
    with `failed_after` it commits its K-th changing request and then answers it with a 500.
    """

    commit: str = "one-txn"
    steps: bool = False
    dies: bool = False
    downtimes: tuple[float, ...] = ()
    wrong_at: int = 0  # the question (from 1) its person answers wrong; 0: none
    no_reply: str = ""  # "K-applied" or "K-lost": its K-th changing request gets no reply in time
    late: bool = False
    cuts: bool = False
    #: How the model it plays to a program (``--command`` with ``--job``) names a reply's tool calls when a turn is
    #: asked again: ``stable`` (as before) or ``drifting`` (anew, as a real provider does).
    model_ids: str = "stable"
    profile: str = DEFAULT
    failed_after: int = 0  # the changing request (from 1) it answers with a 500 after committing it; 0: none


@dataclass(frozen=True)
class Fault:
    """A fault model, configured: `value` is its settings' values, or the choice a scenario names (its question).

    A fault with several settings (the power cut's ``--sync`` and ``--disk``) joins their values
    with dots in the order of `settings` and drops the trailing ones at their defaults: ``file`` is
    ``--sync file`` on the default disk, ``file.posix`` the same on ``--disk posix``. A setting added
    after the first thus leaves every scenario ID at its default as it was. The first is the fault's
    main axis: what ``--fault all`` sweeps (`every_setting`); the others refine it.

    Every hook does nothing by default; a fault overrides the ones it needs.
    """

    value: str = ""

    slug: ClassVar[str] = ""
    breaks: ClassVar[str] = ""  # what goes wrong, in a sentence
    adds: ClassVar[str] = ""  # what a sweep under it runs, in a sentence
    settings: ClassVar[tuple[Setting, ...]] = ()
    needs: ClassVar[frozenset[Capability]] = frozenset({"world-in-memory"})
    #: Whether each death leaves one of several states: its scenario IDs name one, ``I~S``.
    chooses: ClassVar[bool] = False
    #: Whether its choices are found as the restart passes its points (where a request lands): it is
    #: applied after every other fault, and at most one such fault is in a sweep.
    open_ended: ClassVar[bool] = False
    #: The world's parts it makes its own: two faults cannot both replace one.
    replaces: ClassVar[frozenset[str]] = frozenset()
    #: Whether it breaks something with no crash at all: the uninterrupted run is then a scenario.
    without_crash: ClassVar[bool] = False
    #: Whether it cuts the page cache of the loop's machine where the loop runs for real (in `died`): a
    #: runner then offers one under the run directory (the forked runner's is the power-cut layer,
    #: `crashlab.durable.fuse`), so that a cut leaves there only what the loop's syncs made durable.
    cuts: ClassVar[bool] = False
    #: Whether `--fault all` (the fault matrix) sweeps it: not a fault that only explores what a loop already
    #: does (the schedules of its threads), which changes nothing in a loop with one thread.
    in_matrix: ClassVar[bool] = True
    #: Whether a loop whose threads the harness schedules (`Variant.scheduled`) has been swept under it and
    #: found to repeat itself: a fault that holds a reply back (timeout) left such a loop hung on a wait the
    #: scheduler cannot see, so the others are refused for it until they are.
    schedules_threads: ClassVar[bool] = False

    @classmethod
    def configured(cls, value: str | None = None) -> Fault:
        """The fault at `value` (its settings' values, joined with dots), the defaults where None or left
        off; a value it does not take is refused."""
        if not cls.settings:
            if value:
                raise BadInput(f"--fault {cls.slug} takes no setting (got {value!r})")
            return cls()
        given = value.split(".") if value is not None else []
        if len(given) > len(cls.settings):
            raise BadInput(f"+{cls.slug}={value}: the {cls.slug} fault takes {len(cls.settings)} settings, "
                           f"{'.'.join(s.option.upper() for s in cls.settings)}")
        values = [*given, *(s.default for s in cls.settings[len(given):])]
        for setting, chosen in zip(cls.settings, values, strict=True):
            if chosen not in setting.choices:
                raise BadInput(f"--{setting.option} {chosen!r} is not one of {', '.join(setting.choices)} "
                               f"(the {cls.slug} fault's setting)")
        while len(values) > 1 and values[-1] == cls.settings[len(values) - 1].default:
            values.pop()
        return cls(".".join(values))

    @classmethod
    def with_options(cls, options: dict[str, str | None]) -> Fault:
        """The fault at the settings the command line's options give (by option name), the defaults where None."""
        values = [options.get(s.option) or s.default for s in cls.settings]
        return cls.configured(".".join(values) if values else None)

    @classmethod
    def parse(cls, value: str) -> Fault:
        """The fault a scenario ID names with ``+SLUG=VALUE`` (or ``+SLUG``)."""
        return cls.configured(value or None)

    @property
    def values(self) -> tuple[str, ...]:
        """Its value's parts: each setting's value, those left off at their defaults dropped."""
        return tuple(self.value.split(".")) if self.value else ()

    def chosen(self, option: str) -> str:
        """The value of its setting `option`, its default if the value leaves it off."""
        k = next(k for k, s in enumerate(self.settings) if s.option == option)
        return self.values[k] if k < len(self.values) else self.settings[k].default

    @property
    def tag(self) -> str:
        """Its part of a scenario ID: ``+power-cut=file``."""
        return f"+{self.slug}" + (f"={self.value}" if self.value else "")

    @property
    def said(self) -> str:
        """Its settings as a table says them (``sync file``, ``sync file, disk posix``), or ""."""
        if not self.settings:
            return ""
        return ", ".join(f"{s.option} {v}" for s, v in zip(self.settings, self.values, strict=False))

    def parts(self, parts: Parts) -> Parts:
        """The world's parts under this fault."""
        return parts

    def sync(self) -> str | None:
        """What the checkpoint store syncs under this fault, if it says."""
        return None

    def begin(self, earlier: Callable[[], WorldState]) -> WorldState | None:
        """The world the first process meets, if not a fresh one; `earlier` runs the loop once, whole."""
        return None

    def left(self, left: Left, death: Death) -> Iterable[Left]:
        """The states a death can leave under this fault, given one it leaves under the faults before."""
        return (left,)

    def depth(self, depth: int) -> int:
        """How many crashes a scenario under it may have, given the sweep's depth."""
        return depth

    def variations(self, without: Rerunning) -> Iterable[Fault]:
        """The faults a sweep runs, each a sweep of its own; `without` is the sweep without this fault."""
        return (self,)

    def keeps(self, result: ScenarioResult) -> bool:
        """Whether a scenario of the sweep counts under this fault."""
        return True

    def acted(self, run: ScenarioRun) -> bool:
        """Whether the fault broke anything in `run`: a scenario it never acts in names more than there is."""
        return True

    def note(self, event: Event) -> str | None:
        """An event of this fault's own, as a scenario's story tells it."""
        return None

    def explored(self, sweep: Swept) -> str:
        """What a table's ``orders`` column says of the schedules `sweep` ran under this fault, if anything."""
        return ""

    def schedule(self, process: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The schedule of process `process`'s threads (`crashlab.protocols.schedule`), if it names one: the option
        taken at each decision (the first process's), and the threads that go first (a restart's)."""
        return None

    def serve(self, serving: Serving) -> Serving | None:
        """How crashlab's service runs under this fault, for a loop whose tools call it; None while the
        fault has no form there (a sweep of such a loop under it is then refused)."""
        return None

    def died(self, machine: Machine) -> None:
        """After a process that ran for real has died, with every process it started: act on its machine."""


@cache
def registry() -> dict[str, type[Fault]]:
    """Every fault installed, by slug, in the order of their slugs."""
    from importlib.metadata import entry_points

    found: dict[str, type[Fault]] = {}
    for entry in entry_points(group=ENTRY_POINTS):
        fault = entry.load()
        if not (isinstance(fault, type) and issubclass(fault, Fault)) or fault.slug != entry.name:
            raise BadInput(f"the entry point {entry.name} = {entry.value} of group {ENTRY_POINTS} is not a "
                           f"crashlab.faults.Fault subclass whose slug is {entry.name!r}")
        found[entry.name] = fault
    return dict(sorted(found.items()))


def servable() -> list[str]:
    """The faults a loop whose tools call crashlab's service can be swept under."""
    return ["crash", *(slug for slug, fault in registry().items() if fault.serve is not Fault.serve)]


def find(slug: str) -> type[Fault]:
    faults = registry()
    if slug not in faults:
        raise BadInput(f"unknown fault {slug!r} (valid: {', '.join(faults)}; `crashlab faults` says what each breaks)")
    return faults[slug]


@dataclass(frozen=True)
class Faults:
    """The faults one sweep or scenario runs under, composed: each applies its hooks in turn."""

    members: tuple[Fault, ...] = ()

    @classmethod
    def of(cls, faults: Iterable[Fault]) -> Faults:
        """The faults in their canonical order (the open-ended last); the crash, which breaks nothing
        more, drops out. Two that replace one part of the world, or two open-ended ones, are refused."""
        members = sorted({f for f in faults if f.slug != "crash"}, key=lambda f: (f.open_ended, f.slug))
        slugs = [f.slug for f in members]
        for k, fault in enumerate(members):
            if fault.slug in slugs[:k]:
                raise BadInput(f"--fault {fault.slug} is named twice")
            for other in members[:k]:
                if shared := fault.replaces & other.replaces:
                    raise BadInput(f"--fault {other.slug} and --fault {fault.slug} both replace the world's "
                                   f"{', '.join(sorted(shared))}: they cannot be swept together")
                if fault.open_ended and other.open_ended:
                    raise BadInput(f"--fault {other.slug} and --fault {fault.slug} each find their choices as the "
                                   "restart runs: they cannot be swept together")
        return cls(tuple(members))

    def __bool__(self) -> bool:
        return bool(self.members)

    @property
    def tag(self) -> str:
        return "".join(f.tag for f in self.members)

    @property
    def name(self) -> str:
        """The faults as a table's column names them: ``power-cut file``, or ``crash``."""
        return " + ".join(" ".join((f.slug, *f.values)) for f in self.members) or "crash"

    @property
    def needs(self) -> frozenset[Capability]:
        return frozenset().union(*(f.needs for f in self.members))

    @property
    def chooses(self) -> bool:
        return any(f.chooses for f in self.members)

    @property
    def without_crash(self) -> bool:
        return any(f.without_crash for f in self.members)

    @property
    def cuts(self) -> bool:
        return any(f.cuts for f in self.members)

    def parts(self) -> Parts:
        parts = Parts()
        for fault in self.members:
            parts = fault.parts(parts)
        return parts

    def sync(self) -> str:
        return next((s for f in self.members if (s := f.sync()) is not None), "none")

    def begin(self, earlier: Callable[[], WorldState]) -> WorldState | None:
        state = None
        for fault in self.members:
            state = fault.begin(earlier) or state
        return state

    def schedule(self, process: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The schedule of process `process`'s threads, `picks` and `first`: the one a fault names, else the
        default."""
        return next((s for f in self.members if (s := f.schedule(process)) is not None), ((), ()))

    def serving(self, profile: str = DEFAULT) -> Serving:
        """How crashlab's service runs under every member, keeping `profile`'s contract; a member with no form there
        is refused in one line."""
        serving = Serving(profile=profile)
        for fault in self.members:
            served = fault.serve(serving)
            if served is None:
                raise BadInput(f"--fault {fault.slug} has no form yet for a loop whose tools call crashlab's service "
                               f"(those that have: {', '.join(servable())})")
            serving = served
        return serving

    def left(self, death: Death) -> list[Iterable[Left]]:
        """The states a death can leave, in groups: a group ends early where an open-ended choice does."""
        groups: list[Iterable[Left]] = [(death.crash(),)]
        for fault in self.members:  # each at this point, while the world and store are as the death left them
            groups = [fault.left(left, death) if fault.open_ended else list(fault.left(left, death))
                      for group in groups for left in group]
        return groups

    def depth(self, depth: int) -> int:
        for fault in self.members:
            depth = fault.depth(depth)
        return depth

    def keeps(self, result: ScenarioResult) -> bool:
        return all(f.keeps(result) for f in self.members)

    def died(self, machine: Machine) -> None:
        for fault in self.members:
            fault.died(machine)

    def note(self, event: Event) -> str | None:
        return next((said for f in self.members if (said := f.note(event)) is not None), None)

    @property
    def varying(self) -> tuple[Fault, ...]:
        """The faults that sweep several configurations (every question a wrong answer can fall on), where
        no value names one."""
        return tuple(f for f in self.members if type(f).variations is not Fault.variations and not f.value)

    def variations(self, without: Rerunning) -> Iterator[Faults]:
        """The fully configured faults a sweep under these runs, one tree each: every combination of the
        varying faults' configurations, found from `without`, the sweep under the faults that do not vary."""
        choices = [list(f.variations(without)) if f in self.varying else [f] for f in self.members]
        for chosen in product(*choices):
            yield replace(self, members=tuple(chosen))


def every_setting() -> list[Faults]:
    """Every fault alone, at each value of its first setting (the others at their defaults): what `--fault
    all` sweeps, the fault matrix's columns."""
    return [Faults.of([fault.configured(value)]) for fault in registry().values() if fault.in_matrix
            for value in (fault.settings[0].choices if fault.settings else (None,))]


def parse_tags(text: str) -> Faults:
    """The faults a scenario ID names after its slug: ``+power-cut=file+tracker-crash=two-step``."""
    faults = []
    for tag in text.split("+")[1:]:
        slug, _, value = tag.partition("=")
        if slug == "crash":
            raise BadInput("+crash names no fault: a scenario ID without a '+' tag is the crash's")
        faults.append(find(slug).parse(value))
    return Faults.of(faults)
