"""`crashlab plot`: the sweep as one picture."""

from __future__ import annotations

from pathlib import Path

import click

from crashlab.cli.options import choose, job_option, runner_for, variant_options
from crashlab.engine.sweep import sweep_all
from crashlab.errors import BadInput
from crashlab.protocols.scenario import Setup

#: `plot --out`: the picture formats, by file extension (crashlab.report.plot.FORMATS, which imports matplotlib).
PLOT_FORMATS = ("png", "pdf", "svg")


@click.command()
@job_option
@variant_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default="results/sweep.png", show_default=True,
              help=f"The picture; its extension picks the format: {', '.join(PLOT_FORMATS)}.")
def plot(job_spec: str, loop: str | None, variant: str | None, tracker: str | None, effects_file: str | None,
         scheduled: bool, commands: tuple[str, ...], out: Path) -> None:
    """Draw the sweep: each variant's single crashes, and its double crashes as a heatmap (needs crashlab[plot])."""
    fmt = out.suffix.lower().removeprefix(".")
    if fmt not in PLOT_FORMATS:
        raise BadInput(f"cannot draw {out}: the extension picks the format, one of .{', .'.join(PLOT_FORMATS)}")
    folder = out.absolute().parent
    if not (folder.is_dir() or folder.parent.is_dir()):
        raise BadInput(f"cannot draw {out}: no directory {folder.parent} to make {folder.name}/ in (make it first)")
    job, variants = choose(job_spec, loop, variant, tracker, effects_file, scheduled, commands=commands)
    try:
        from crashlab.report.plot import draw
    except ImportError:
        raise BadInput("crashlab plot needs matplotlib: pip install 'crashlab[plot]'") from None
    sweeps = sweep_all([Setup(v, job) for v in variants], runner_for(variants, False, None))
    try:
        click.echo(f"wrote {draw(sweeps, out, title=f'crashlab sweep of {job.source}', fmt=fmt)}")
    except OSError as error:
        raise BadInput(f"cannot write the picture to {out}: {error.strerror}") from None
