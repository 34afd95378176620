"""The README is the front door: its table is the one the sweep prints, and its example does what it says."""

import re

import pytest

from .conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_the_readme_shows_the_table_the_sweep_prints(cli):
    code, out, _ = cli("sweep")
    assert code == 0 and out.strip() in README


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= 250


def example() -> str:
    return re.search(r"```python\n(.*?)```", README, re.S).group(1)


def test_the_readme_example_passes_with_its_key_and_fails_without():
    exec(compile(example(), "README.md", "exec"), {})
    keyless = example().replace(', key=f"triage-1:{step}"', "")
    assert keyless != example()
    with pytest.raises(AssertionError, match=r"A made twice"):
        exec(compile(keyless, "README.md", "exec"), {})
