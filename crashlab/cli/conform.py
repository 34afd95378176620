"""`crashlab conform URL --profile NAME`: which of a provider's idempotency promises a running service keeps."""

from __future__ import annotations

import click


@click.command()
@click.argument("url")
@click.option("--profile", "slug", default="ietf", show_default=True, metavar="NAME",
              help="The contract to hold the service to (`crashlab profiles` lists them).")
@click.option("--token", envvar="CRASHLAB_SERVICE_TOKEN", metavar="TOKEN",
              help="The token of crashlab's controls (what `crashlab serve` prints; env CRASHLAB_SERVICE_TOKEN): "
                   "with it the records are counted, and a request held in flight, a failure after the effect and "
                   "the clock can be probed. It moves the service's clock on.")
@click.option("--path", default="/issues", show_default=True,
              help="Where the changing requests go: each a JSON object with a title, and a body for another "
                   "payload.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def conform(url: str, slug: str, token: str | None, path: str, fmt: str) -> None:
    """Probe the idempotency service at URL and say, promise by promise, whether it keeps the contract of
    --profile NAME.

    Each probe sends its own requests, under keys and titles of its own, the key under the
    provider's header: a replay, another payload under one key, a retry while the first is in
    flight, a retry after a failure that followed the effect, the retention's edge, a missing key, a
    key too long or beyond ASCII. A probe the service cannot be put to (no token, no such control) is
    not run, never passed. Exit status 0 when every probe that ran kept its promise, 1 otherwise, 2
    if URL cannot be reached.

    \b
    crashlab serve --dir svc --profile qonto     # prints its URL and token
    CRASHLAB_SERVICE_TOKEN=... crashlab conform http://127.0.0.1:PORT --profile qonto
    """
    from crashlab.conform import as_json, conform, kept, lines
    from crashlab.profiles import find

    profile = find(slug)
    verdicts = conform(url, profile, token, path)
    click.echo(as_json(url, profile, verdicts) if fmt == "json" else "\n".join(lines(url, profile, verdicts)))
    if not kept(verdicts):
        raise SystemExit(1)
