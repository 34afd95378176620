"""`crashlab serve`: the issue tracker as a real service, in the foreground, until Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from crashlab.world import TRACKER_MODES

if TYPE_CHECKING:
    from crashlab.service.server import Started

#: `--keys` and `--model-ids`, spelt here so that `crashlab --help` imports no part of the service.
KEY_RULES = ("optional", "required")
MODEL_IDS = ("stable", "drifting")


def say(started: Started) -> None:
    url, token = started.url, started.token
    click.echo(url)
    click.echo(f"crashlab serve: {started.service.describe()}")
    if started.exposed:
        click.echo(f"  {started.exposed}")
    click.echo(f"  HTTP  POST {url}/issues  POST {url}/issues/N/comments  GET {url}/search?q=TEXT  "
               f"GET {url}/idempotency/KEY  (bodies as Content-Type: application/json)")
    click.echo(f"  MCP   {url}/mcp (streamable HTTP; the key is the tools' idempotency_key argument)")
    if started.model.script is not None:
        click.echo(f"  model {started.model.describe()}; for the official SDKs:")
        click.echo(f"        OPENAI_BASE_URL={url}/v1 ANTHROPIC_BASE_URL={url} (any API key)")
    click.echo(f"  what it holds: GET {url}/_crashlab/state -H 'Authorization: Bearer {token}'")
    click.echo(f"  a run against it: CRASHLAB_SERVICE_TOKEN={token} crashlab run JOB --dir DIR --service {url}")
    click.echo(f"  its contract checked: CRASHLAB_SERVICE_TOKEN={token} crashlab conform {url} "
               f"--profile {started.service.profile.slug}")
    click.echo("  Ctrl-C stops it; its records stay in the directory.")


@click.command("serve")
@click.option("--dir", "directory", required=True, type=click.Path(path_type=Path), metavar="DIR",
              help="The service's directory: service.sqlite, kept across restarts. Made if absent; its parent must "
                   "exist.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on: a loopback one, unless --expose.")
@click.option("--expose", is_flag=True,
              help="Let --host be an address beyond loopback (0.0.0.0: every address of this machine). Its tools "
                   "need no token: whoever reaches it may file issues and search them. Its controls still need "
                   "the token.")
@click.option("--port", type=int, default=0, show_default=True, help="The port to listen on; 0 takes any free one.")
@click.option("--tracker", type=click.Choice(TRACKER_MODES), default="keyed", show_default=True,
              help="What it does with an Idempotency-Key: keyed honours it (a retry gets the first response); "
                   "lookup and fencing only answer GET /idempotency/KEY (fencing also fences a key not found); "
                   "keyless ignores it.")
@click.option("--keys", type=click.Choice(KEY_RULES), default="optional", show_default=True,
              help="required: a changing request without an Idempotency-Key is refused (400).")
@click.option("--profile", default="ietf", show_default=True, metavar="NAME",
              help="The idempotency contract a keyed tracker keeps: a provider's retention, its answer to another "
                   "payload, to a retry in flight, to a missing or long key (`crashlab profiles` lists them).")
@click.option("--retention", type=float, metavar="HOURS",
              help="How long a key is kept, by the service's clock, overriding the profile's (ietf: 24).")
@click.option("--failed-after-effect", "failed_after", type=int, default=0, metavar="K",
              help="The K-th changing request commits its record and then answers 500; what its key keeps is the "
                   "profile's (a retry gets the 500 again, is run again, or gets the success).")
@click.option("--job", metavar="JOB",
              help="Also play JOB's model (a job file, or a shipped job's name) over OpenAI's Chat Completions and "
                   "Responses and Anthropic's Messages, at URL/v1: each reply decided by the conversation sent.")
@click.option("--model-ids", type=click.Choice(MODEL_IDS), default="stable", show_default=True,
              help="With --job: a reply given again names its tool calls as before (stable), or anew (drifting).")
def serve(directory: Path, host: str, expose: bool, port: int, tracker: str, keys: str, profile: str,
          retention: float | None, failed_after: int, job: str | None, model_ids: str) -> None:
    """Run the issue tracker as an HTTP service over SQLite in DIR, until Ctrl-C or SIGTERM.

    Its first line is its URL. A loop's tools call it with any HTTP client, or over MCP at URL/mcp;
    its records outlive every crash of the loop, as a real service's would. Run it again on the
    same DIR and it finds them. Only one service at a time may use DIR.

    It answers only requests that name a loopback host (or the address it listens on), come from no
    web page but a loopback one, and send their bodies as JSON: a page's cross-site request changes
    nothing. Its controls (URL/_crashlab/: state, reset, clock) also need the token it prints as it
    starts, made anew each time.

    With --job, it also plays that job's scripted model to the official OpenAI and Anthropic
    clients, found through OPENAI_BASE_URL (URL/v1) and ANTHROPIC_BASE_URL (URL), any key.

    \b
    crashlab serve --dir svc --port 8765
    curl localhost:8765/issues -H 'Idempotency-Key: k1' --json '{"title": "Login fails"}'
    crashlab serve --dir svc --job triage
    crashlab serve --dir svc --profile qonto
    """
    from crashlab.service.server import Settings
    from crashlab.service.server import serve as run

    code = run(Settings(directory, host, port, tracker, keys, retention, expose=expose, job=job, model_ids=model_ids,
                        profile=profile, failed_after=failed_after), say)
    if code:
        raise SystemExit(code)
