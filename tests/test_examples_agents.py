"""The agents of examples/agents/, each written as its own SDK's docs write one, swept from outside at depth 1.

None imports crashlab or marks anything: the official SDKs find crashlab's model through OPENAI_BASE_URL,
their tools crashlab's service through CRASHLAB_TRACKER_URL, and each keeps its state in files of its working
directory. Their crash points are the model's (``model-asked``, ``model-answered``, each of the triage job's 3
replies) and the service's 3 commits (``accepted``): 9 at depth 1. A death at a commit leaves the request made and
its result unsaved, so the plain form makes it again where the SDK had not saved the result; the keyed form's
key (the run's ID and the model's tool-call ID) is answered, not applied again. `make test-slow` installs what
they need (`crashlab[examples]`, and the Node agent's package by `npm ci`).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass

import pytest

from .conftest import ROOT

AGENTS = ROOT / "examples" / "agents"
README = (ROOT / "README.md").read_text()


@dataclass(frozen=True)
class Counted:
    """What a hand count says the plain form's depth-1 sweep holds: scenarios with duplicates, the duplicates, and
    the model calls paid again."""

    with_dups: int
    dups: int
    calls_plus: int


#: Each agent, by its path in examples/agents/: its command, the module whose absence skips it, and its hand count.
EXAMPLES = {
    # It saves each reply and each result as they come: a death at the k-th commit repeats effect k alone; a death
    # after a reply is sent (model-answered) asks for it again, one call each of the 3 replies.
    "openai_loop.py": (f"{sys.executable} {AGENTS / 'openai_loop.py'}", "openai", Counted(3, 3, 3)),
    # LangGraph saves the model's reply in a checkpoint of its own, and each tool call's result as its own write
    # (the v2 tool node), but with max_concurrency=1 its one thread takes B's call before A's write, queued behind
    # it: a death at B's commit repeats A too. No reply is lost at a commit.
    "langgraph_react.py": (f"{sys.executable} {AGENTS / 'langgraph_react.py'}", "langchain_openai",
                           Counted(3, 4, 3)),
    # The Agents SDK saves a turn's reply with its tools' results, after the last: a death at B's commit loses A's
    # result too (A and B twice), and a death at any commit loses the reply, asked again (3 + 3 calls).
    "openai_agents_sdk.py": (f"{sys.executable} {AGENTS / 'openai_agents_sdk.py'}", "agents", Counted(3, 4, 6)),
    # The Python loop's twin on the openai npm package: the same count.
    "node/agent.mjs": (f"node {AGENTS / 'node' / 'agent.mjs'}", "", Counted(3, 3, 3)),
}


def needs(module: str) -> None:
    """Skip where the agent's SDK is not installed; `make test-slow` installs every one."""
    if module:
        pytest.importorskip(module)
    elif shutil.which("node") is None:
        pytest.skip("needs Node.js")
    elif not (AGENTS / "node" / "node_modules" / "openai").is_dir():
        pytest.fail("the Node agent's package is not installed: make examples/agents/node/node_modules/.installed")


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_an_unmodified_agent_duplicates_where_a_hand_count_says_and_its_keyed_form_never(cli, name):
    command, module, counted = EXAMPLES[name]
    needs(module)
    code, out, err = cli("sweep", "--command", f"plain={command}", "--command", f"keyed={command} --keyed",
                         "--job", "triage", "--depth", "1", "--format", "json")
    assert code == 0, err
    found = {row["variant"]: row for row in json.loads(out)}
    plain, keyed = found["plain"], found["keyed"]
    assert (plain["points"], plain["with_dups"], plain["dups"], plain["missing"], plain["calls_plus"]) == \
        (9, counted.with_dups, counted.dups, 0, counted.calls_plus)
    assert (keyed["points"], keyed["with_dups"], keyed["dups"], keyed["missing"]) == (9, 0, 0, 0)
    assert keyed["calls_plus"] == counted.calls_plus  # a key saves no model call
    row = (f"| {plain['points']} | {plain['with_dups']} | {plain['dups']} | {plain['calls_plus']} | "
           f"{keyed['dups']}, {keyed['missing']} |")
    assert re.search(rf"^\| `{re.escape(name)}` \| [^|]+ {re.escape(row)}$", README, re.M), "the README's row"
