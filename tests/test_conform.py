"""`crashlab conform URL --profile NAME`: which of a provider's idempotency promises a running service keeps.

The check must tell every contract from every other: `crashlab serve --profile P` keeps P and
breaks every other profile Q, each pair told apart by a probe its cells predict. Two profiles are
one contract as data (`ietf` and `stripe-v2`: the draft's cells are the ones Stripe's v2 page
leaves blank, and both finish failed work), so no probe can tell them apart, and the matrix says so.
A service that honours no key at all fails every keyed profile: the check cannot pass vacuously.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from crashlab.conform import Verdict, conform, kept
from crashlab.profiles import find, registry
from crashlab.service.process import ServiceProcess

#: The probes, in the order they run.
PROBES = ["replay", "other-payload", "concurrent", "5xx-then-retry", "missing-key", "malformed-key", "retention"]
#: Profiles no probe can tell apart, because every cell a service keeps is the same.
ONE_CONTRACT = {frozenset({"ietf", "stripe-v2"})}


def cells(slug: str) -> dict[str, object]:
    """A profile's contract: every field but those that name and cite it."""
    return {k: v for k, v in asdict(find(slug)).items() if k not in ("slug", "provider", "source", "read", "lesson")}


def broken(verdicts: list[Verdict]) -> list[str]:
    return [v.probe for v in verdicts if v.outcome == "broken"]


class Served(dict[str, ServiceProcess]):
    """`crashlab serve --profile P`'s service by P, each started when first asked for, once for the module."""

    def __init__(self, root: Path):
        super().__init__()
        self.root = root

    def __missing__(self, slug: str) -> ServiceProcess:
        self[slug] = ServiceProcess.start(self.root / slug, control=False, profile=slug)
        return self[slug]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    services = Served(tmp_path_factory.mktemp("served"))
    yield services
    for service in services.values():
        service.process.terminate()
    for service in services.values():
        service.close()


def test_indistinguishable_profiles_are_exactly_those_whose_cells_are_equal():
    slugs = list(registry())
    same = {frozenset({p, q}) for p in slugs for q in slugs if p < q and cells(p) == cells(q)}
    assert same == ONE_CONTRACT


@pytest.mark.slow
def test_conform_passes_each_profiles_service_under_its_profile_and_fails_it_under_every_other(served):
    """The 9 x 9 matrix: what each probe says of each service, held to what the two profiles' cells predict."""
    slugs = list(registry())
    matrix = {(p, q): conform(served[p].url, find(q), served[p].token) for p in slugs for q in slugs}
    for (p, q), verdicts in matrix.items():
        ran = {v.probe for v in verdicts if v.outcome != "not run"}
        assert ran == set(PROBES) - ({"malformed-key", "retention"} if q == "none" else set()), (p, q, verdicts)
        if p == q or frozenset({p, q}) in ONE_CONTRACT:
            assert kept(verdicts), (p, q, [v for v in verdicts if v.outcome == "broken"])
        else:
            assert not kept(verdicts) and broken(verdicts), (p, q)
    # Each documented difference is told apart by the probe that measures it.
    assert "other-payload" in broken(matrix["qonto", "ietf"]) and "retention" in broken(matrix["qonto", "ietf"])
    assert "5xx-then-retry" in broken(matrix["checkout", "stripe-v1"])
    assert "5xx-then-retry" in broken(matrix["stripe-v1", "stripe-v2"])
    assert "malformed-key" in broken(matrix["worldline", "ietf"]) and "malformed-key" in broken(matrix["ietf", "worldline"])
    assert "concurrent" in broken(matrix["ietf", "acp"]), "no Retry-After, no idempotency_in_flight"
    assert "retention" in broken(matrix["ietf", "truelayer"]) and "retention" in broken(matrix["truelayer", "ietf"])
    assert "replay" in broken(matrix["ietf", "none"]) and "replay" in broken(matrix["none", "ietf"])
    assert "replay" in broken(matrix["ietf", "checkout"]), "a Checkout client's key, under its header, is no key here"


def test_conform_passes_the_default_service_under_its_profile_and_names_the_probes_that_break_another(served):
    ietf = conform(served["ietf"].url, find("ietf"), served["ietf"].token)
    assert [v.probe for v in ietf] == PROBES and {v.outcome for v in ietf} == {"kept"}
    assert re.fullmatch(r'201 \{"number":(\d+)\}, then 201 \{"number":\1\} \+Idempotent-Replayed; 1 record',
                        ietf[0].evidence)
    as_stripe = conform(served["ietf"].url, find("stripe-v1"), served["ietf"].token)
    assert broken(as_stripe) == ["other-payload", "concurrent", "5xx-then-retry"]
    assert next(v for v in as_stripe if v.probe == "other-payload").evidence.startswith("expected 400 idempotency_error")


def test_without_the_token_the_probes_that_need_the_services_controls_are_not_run(served):
    verdicts = conform(served["ietf"].url, find("ietf"))
    assert {v.probe: v.outcome for v in verdicts} == {
        "replay": "kept", "other-payload": "kept", "concurrent": "not run", "5xx-then-retry": "not run",
        "missing-key": "kept", "malformed-key": "kept", "retention": "not run"}
    assert kept(verdicts)


# A service that is no idempotent service at all: a stdlib server that applies every POST.


class AppliesEveryPost(BaseHTTPRequestHandler):
    made = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.lock:
            type(self).made += 1
            number = self.made
        self.reply(201, {"number": number})

    def do_GET(self) -> None:
        self.reply(404, {"error": "not found"})

    def reply(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def naive() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), AppliesEveryPost)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("slug", [slug for slug, profile in registry().items() if profile.honours_keys])
def test_a_server_that_applies_every_post_fails_every_keyed_profile(naive, slug):
    verdicts = conform(naive, find(slug), token="any")
    assert not kept(verdicts)
    assert "replay" in broken(verdicts) and "other-payload" in broken(verdicts)
    assert {v.probe for v in verdicts if v.outcome == "not run"} == {"concurrent", "5xx-then-retry", "retention"}


def test_a_server_that_applies_every_post_keeps_the_contract_of_no_key(naive):
    assert kept(conform(naive, find("none")))


# The command line.


def test_the_command_prints_a_line_per_probe_and_exits_0_or_1(cli, served):
    url, token = served["worldline"].url, served["worldline"].token
    code, out, _ = cli("conform", url, "--profile", "worldline", "--token", token)
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[:-1]] == PROBES
    assert out.splitlines()[-1] == f"{url} keeps the worldline contract (7 kept, 0 broken, 0 not run)"
    code, out, _ = cli("conform", url, "--profile", "ietf", "--token", token, "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["kept"] is False and report["profile"] == "ietf"
    assert [p["outcome"] for p in report["probes"] if p["probe"] == "malformed-key"] == ["broken"]


@pytest.mark.parametrize(("args", "says"), [
    (["http://127.0.0.1:1"], "cannot reach http://127.0.0.1:1"),
    (["ftp://example"], "is not an http:// or https:// URL"),
    (["http://127.0.0.1:1", "--profile", "stripe"], "unknown profile 'stripe' (valid: ietf,"),
])
def test_bad_input_is_refused_in_one_line(cli, args, says):
    code, out, err = cli("conform", *args)
    assert (code, out) == (2, "")
    assert err.startswith("crashlab: error: ") and says in err and err.count("\n") == 1
