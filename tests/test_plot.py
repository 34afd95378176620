"""The sweep picture is a PNG of the documented size, for the book's five designs and for a lone one."""

import struct
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from crashlab.job import load_job
from crashlab.loops.designs import DESIGNS
from crashlab.protocols.outcome import Outcome
from crashlab.report import plot

from .conftest import SCENARIOS
from .helpers import swept

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which a PNG must carry first, right after the magic."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_MAGIC, "not a PNG"
    length, kind = struct.unpack(">I4s", head[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", head[16:24])


# matplotlib warns (a UserWarning) when labels leave the layout no room; only that is this test's concern, not a
# descriptor another test left for the collector
@pytest.mark.filterwarnings("error::UserWarning")
def test_the_triage_sweep_of_all_five_designs_draws_one_png_of_the_documented_size(tmp_path, triage):
    sweeps = [swept(slug, triage) for slug in DESIGNS]
    out = plot.draw(sweeps, tmp_path / "results" / "sweep.png", title="triage")
    assert out == tmp_path / "results" / "sweep.png"  # parent directories are created
    assert out.stat().st_size > 10_000
    assert png_size(out) == (1600, 1250)  # the size the README's picture has


@pytest.mark.filterwarnings("error::UserWarning")
def test_a_single_design_on_a_read_only_job_draws_too(tmp_path):
    """Nothing duplicates and nobody is asked: every heatmap cell is zero, and that still renders."""
    sweep = swept("per-turn", load_job(SCENARIOS / "read-only.yaml"))
    out = plot.draw([sweep], str(tmp_path / "read-only.png"))
    assert isinstance(out, Path)
    assert png_size(out) == (plot.WIDTH, plot.HEIGHT)


def test_drawing_leaves_no_pyplot_figure_behind(tmp_path, triage):
    """The CLI may draw many pictures in one process; none may pile up in pyplot's registry."""
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plot.draw([swept("keys", triage)], tmp_path / "keys.png")
    assert plt.get_fignums() == before


def test_nothing_to_draw_is_refused(tmp_path):
    with pytest.raises(ValueError):
        plot.draw([], tmp_path / "empty.png")


@pytest.mark.parametrize(
    ("dups", "asks", "calls_plus", "expected"),
    [
        ({"A": 1}, 1, 1, "duplicate"),
        ({}, 2, 1, "asked a person"),
        ({}, 0, 1, "extra model call"),
        ({"A": 0}, 0, 0, "clean"),
    ],
)
def test_a_single_crash_is_coloured_by_its_worst_outcome(dups, asks, calls_plus, expected):
    name, _ = plot.CATEGORIES[plot.category(Outcome(dups, (), asks, calls_plus, approvals=0))]
    assert name == expected
