"""What a sweep hands the people and the machines that act on it (issue 40): a receipt per window, JUnit XML a CI
server reads, an exit code for expectations, and one HTML page that opens from disk and loads nothing."""

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from crashlab.report.receipts import KINDS, receipt_schema

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The book's five designs swept two deep into a results directory, as `make results` sweeps them."""
    from crashlab.cli import main

    out = tmp_path_factory.mktemp("book") / "r"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.setattr("sys.argv", ["crashlab", "sweep", "--variant", "all", "--out", str(out)])
        with pytest.raises(SystemExit) as exit_:
            main()
    assert exit_.value.code == 0
    return out


def receipts(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "receipts.jsonl").read_text().splitlines()]


def test_every_receipt_of_the_shipped_designs_fits_the_schema_schema_receipt_prints(cli, book):
    code, out, _ = cli("schema", "--receipt")
    assert code == 0 and json.loads(out) == receipt_schema()
    jsonschema.Draft202012Validator.check_schema(json.loads(out))
    found = receipts(book)
    for receipt in found:
        jsonschema.validate(receipt, json.loads(out))
        assert receipt["version"] == 1 and receipt["kinds"] and set(receipt["kinds"]) <= set(KINDS)
    # every scenario that failed or asked is in exactly one receipt, and no other scenario is in any
    held = [s["id"] for r in found for s in r["scenarios"]]
    scenarios = [json.loads(line) for line in (book / "scenarios.jsonl").read_text().splitlines()]
    assert sorted(held) == sorted(s["id"] for s in scenarios if s["dups"] or s["missing"] or s["wrong"] or s["asks"])
    assert {r["variant"] for r in found if r["kinds"] == ["asked"]} == {"markers"}


def test_a_receipt_holds_its_scenarios_deaths_keys_counts_and_a_command_that_gives_the_same_counts(cli, book):
    found = receipts(book)
    plain = next(r for r in found if r["variant"] == "after-reply" and len(r["scenarios"]) > 1)
    assert all(len(s["crashes"]) == len(s["points"]) for s in plain["scenarios"])
    assert [d["point"] for d in plain["deaths"]] == plain["scenarios"][0]["points"]
    assert plain["counts"]["A"] == 2 and "A" in plain["effects"]
    assert {q["key"] for q in plain["requests"]} == {None}  # after-reply sends no key
    keyed = next(r for r in found if r["variant"] == "per-turn")
    assert keyed["replay"] == f"crashlab explain {keyed['scenarios'][0]['id']} --job triage"
    marked = next(r for r in found if r["variant"] == "markers")
    assert marked["harm"].startswith("asked a person") and marked["asks"] > 0
    for receipt in (plain, marked):
        code, out, err = cli(*receipt["replay"].split()[1:], "--format", "json")
        assert code == 0, err
        verdict = json.loads(out)["verdict"]
        counts = {e: 0 if e in verdict["missing"] else 1 + verdict["duplicates"].get(e, 0)
                  for e in verdict["expected"]}
        assert counts == receipt["counts"] and verdict["asks"] == receipt["asks"]


#: What the Ant JUnit schema (the one GitHub's test-report actions, GitLab and Jenkins read) requires of each element.
JUNIT_REQUIRED = {
    "testsuite": {"name", "timestamp", "hostname", "tests", "failures", "errors", "time"},
    "testcase": {"name", "classname", "time"},
    "failure": {"message", "type"},
}


def test_junit_is_a_suite_per_variant_a_case_per_effect_failed_with_its_windows_and_their_commands(cli, tmp_path):
    file = tmp_path / "sweep.xml"
    code, out, err = cli("sweep", "--variant", "after-reply,keys", "--depth", "1", "--format", "junit",
                         "--junit", str(file))
    assert code == 0, err
    assert file.read_text() == out
    root = ET.fromstring(out)
    assert root.tag == "testsuites" and root.get("tests") == "8" and root.get("failures") == "4"
    for element in root.iter():
        assert JUNIT_REQUIRED.get(element.tag, set()) <= set(element.attrib), element.tag
    for suite in root.iter("testsuite"):
        tags = [child.tag for child in suite]
        assert tags[0] == "properties" and tags[-2:] == ["system-out", "system-err"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp", ""))
    cases = {case.get("name"): case.find("failure") for case in root.iter("testcase")}
    assert list(cases) == ["after-reply", "after-reply: A", "after-reply: B", "after-reply: C",
                           "keys", "keys: A", "keys: B", "keys: C"]
    assert [name for name, failed in cases.items() if failed is not None] == list(cases)[:4]
    failure = cases["after-reply: A"]
    assert failure.get("message") == "1 failure window (3 scenarios): A made twice"
    assert failure.text == ("A made twice when the process dies anywhere from `accepted#1` to `temp#3` (3 scenarios, "
                            "after-reply:6 to after-reply:8); replay: crashlab explain after-reply:6 --job triage")
    assert len((cases["after-reply"].text or "").splitlines()) == 3


@pytest.mark.parametrize(("bounds", "code", "said"), [
    ("keys: {dups: 0, missing: 0}\nmarkers:\n  asks: 669\n", 0, "meets"),
    ("after-reply: {dups: 0}\nkeys: {asks: 0}\n", 1, "differs: after-reply / dups: 360, expected at most 0"),
    ("keys-markers: {dups: 0}\n", 1, "differs: keys-markers: expected, but not swept"),
])
def test_expect_exits_1_naming_every_count_past_its_bound(cli, tmp_path, bounds, code, said):
    (tmp_path / "expect.yaml").write_text(bounds)
    got, _, err = cli("sweep", "--variant", "after-reply,keys,markers", "--expect", str(tmp_path / "expect.yaml"))
    assert got == code and said in err


@pytest.mark.parametrize(("bounds", "said"), [
    ("keys: {duplicates: 0}\n", "unknown count 'duplicates'"),
    ("keys: {dups: true}\n", "True is not a count"),
    ("keys: {dups: -1}\n", "-1 is not a count"),
    ("- keys\n", "expected a mapping of variants"),
    ("keys: [dups]\n", "expected a mapping of counts"),
])
def test_an_expectations_file_that_cannot_be_read_exactly_is_refused_in_one_line(cli, tmp_path, bounds, said):
    (tmp_path / "expect.yaml").write_text(bounds)
    code, out, err = cli("sweep", "--variant", "keys", "--expect", str(tmp_path / "expect.yaml"))
    assert code == 2 and out == "" and said in err and err.count("\n") == 1


def test_the_report_is_one_file_with_every_window_and_the_provenance_and_no_address_to_load(cli, book, tmp_path):
    page = tmp_path / "page.html"
    code, _, err = cli("report", str(book), "--out", str(page))
    assert code == 0 and err.startswith(f"wrote {page} (")
    html = page.read_text()
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', html, re.S)[1])
    assert data["receipts"] == receipts(book)
    assert [len(t["points"]) for t in data["tracks"]] == [18, 34, 34, 43, 43]  # the book's `once`
    assert data["provenance"]["command"].startswith("crashlab sweep --variant all --out")
    assert set(data["provenance"]) == {"crashlab", "command", "job", "job_sha256", "date", "machine", "python"}
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html) and "@import" not in html
    assert "default-src 'none'" in html


def test_a_report_of_no_results_is_refused_in_one_line(cli, book, tmp_path):
    code, _, err = cli("report", str(tmp_path / "nowhere"))
    assert code == 2 and "is not a directory of results" in err and err.count("\n") == 1
    partial = tmp_path / "old"
    shutil.copytree(book, partial)
    (partial / "receipts.jsonl").unlink()
    code, _, err = cli("report", str(partial))
    assert code == 2 and f"has no receipts.jsonl: sweep again with --out {partial}" in err


def test_the_worked_example_sweeps_the_http_loop_and_uploads_the_report():
    page = (ROOT / "docs" / "how-to" / "report.md").read_text()
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", page, re.S)[1])
    steps = workflow["jobs"]["crash-test"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    assert "crashlab sweep --loop examples/http_loop.py:" in runs and "--out results" in runs
    assert "crashlab report results" in runs
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "results/report.html" and upload.get("if") == "always()"


CHROMIUM = shutil.which("chromium")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's chromium)")
def test_the_report_of_the_http_loop_opens_in_chromium_tells_a_clicked_windows_story_and_loads_nothing(cli, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="no Playwright (crashlab[browser])")
    out = tmp_path / "r"
    code, _, err = cli("sweep", "--loop", "examples/http_loop.py:plain,keyed", "--effects", "examples/http_loop.yaml",
                       "--depth", "2", "--out", str(out))
    assert code == 0, err
    assert cli("report", str(out))[0] == 0
    fetched: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("request", lambda request: fetched.append(request.url))
        page.goto((out / "report.html").as_uri())
        first = receipts(out)[0]
        page.click('[data-window="0"]')
        story = page.inner_text("#story")
        browser.close()
    assert first["harm"] in story and first["replay"] in story
    assert f"the story of {first['scenarios'][0]['id']}" in story
    assert fetched == [(out / "report.html").as_uri()]  # the page itself, and nothing else
