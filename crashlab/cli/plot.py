"""`crashlab plot`: the sweep as one picture."""

from __future__ import annotations

from pathlib import Path

import click

from crashlab.cli.options import check_handles, choose_variants, job_option, open_job, variant_options
from crashlab.engine.scenario import Setup
from crashlab.engine.sweep import sweep_all
from crashlab.errors import BadInput

#: `plot --out`: the picture formats, by file extension (crashlab.report.plot.FORMATS, which imports matplotlib).
PLOT_FORMATS = ("png", "pdf", "svg")


@click.command()
@job_option
@variant_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default="results/sweep.png", show_default=True,
              help=f"The picture; its extension picks the format: {', '.join(PLOT_FORMATS)}.")
def plot(job_spec: str, loop: str | None, variant: str | None, tracker: str | None, out: Path) -> None:
    """Draw the sweep: each variant's single crashes, and its double crashes as a heatmap (needs crashlab[plot])."""
    fmt = out.suffix.lower().removeprefix(".")
    if fmt not in PLOT_FORMATS:
        raise BadInput(f"cannot draw {out}: the extension picks the format, one of .{', .'.join(PLOT_FORMATS)}")
    variants = choose_variants(loop, variant, tracker)
    try:
        from crashlab.report.plot import draw
    except ImportError:
        raise BadInput("crashlab plot needs matplotlib: pip install 'crashlab[plot]'") from None
    job = open_job(job_spec)
    check_handles(job, variants)
    sweeps = sweep_all([Setup(v, job) for v in variants])
    try:
        click.echo(f"wrote {draw(sweeps, out, title=f'crashlab sweep of {job.source}', fmt=fmt)}")
    except OSError as error:
        raise BadInput(f"cannot write the picture to {out}: {error.strerror}") from None
