"""What a sweep hands the people and the machines that act on it (issue 40): a receipt per window, JUnit XML a CI
server reads, an exit code for expectations, and one HTML page that opens from disk and loads nothing."""

import json
import re
import shutil
import xml.etree.ElementTree as ET
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
import yaml

from crashlab.report.frameworks import SHOWN
from crashlab.report.matrix import OUTCOMES
from crashlab.report.receipts import KINDS, receipt_schema
from crashlab.report.sections import KIND

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


class Tables(HTMLParser):
    """Every table of a page: its class, and its rows as the text of their cells (`th` and `td` alike), with the
    attributes of each cell's row and of the cell; what a reader sees, whatever script the page holds."""

    def __init__(self, html: str):
        super().__init__()
        self.found: list[dict] = []
        self.cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.found.append({"class": dict(attrs).get("class"), "rows": [], "row_attrs": [], "cell_attrs": []})
        elif tag == "tr" and self.found:
            self.found[-1]["rows"].append([])
            self.found[-1]["row_attrs"].append(dict(attrs))
            self.found[-1]["cell_attrs"].append([])
        elif tag in ("th", "td") and self.found:
            self.cell = []
            self.found[-1]["cell_attrs"][-1].append(dict(attrs))

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self.cell is not None:
            self.found[-1]["rows"][-1].append("".join(self.cell))
            self.cell = None

    def of(self, kind: str) -> list[dict]:
        return [table for table in self.found if table["class"] == kind]


def worst(cell: dict) -> str:
    """A matrix cell as tables.md's grid writes it: the outcome, and its count unless clean or no scenario."""
    return cell["outcome"] if cell["outcome"] in ("clean", "no scenario") else f"{cell['outcome']} {cell['count']:,}"


def test_the_report_of_results_draws_the_fault_matrix_and_each_runtimes_promise_found_beside_it(cli, tmp_path):
    page = tmp_path / "page.html"
    code, _, err = cli("report", "results", "--out", str(page))
    headings = len(json.loads((ROOT / "results" / "frameworks" / "frameworks.json").read_text()))
    assert code == 0 and f"the fault matrix of results/faults, {headings} runtimes of results/frameworks" in err
    html = page.read_text()
    tables = Tables(html)
    book, *runtimes_own = tables.of("matrix")
    for table, where in zip([book, *runtimes_own], ["faults", "frameworks/dbos", "frameworks/langgraph"], strict=True):
        matrix = json.loads((ROOT / "results" / where / "matrix.json").read_text())
        assert table["rows"] == [["variant", *matrix["columns"]],
                                 *([row["name"], *(worst(row[c]) for c in matrix["columns"])] for row in matrix["rows"])]
        assert [a["data-variant"] for a in table["row_attrs"][1:]] == [row["variant"] for row in matrix["rows"]]
        outcomes = [[a["data-outcome"] for a in cells[1:]] for cells in table["cell_attrs"][1:]]
        assert outcomes == [[KIND[row[c]["outcome"]] for c in matrix["columns"]] for row in matrix["rows"]]
    assert "swept by <code>crashlab sweep --fault all --out results/faults</code>" in html
    assert {a["data-outcome"] for cells in book["cell_attrs"][1:] for a in cells[1:]} == set(KIND.values())
    [table] = tables.of("runtimes")
    said = json.loads((ROOT / "results" / "frameworks" / "frameworks.json").read_text())
    heads = [row[0] for row in table["rows"] if len(row) == 1]
    assert heads == [f"{r['title']} {r['version']}: {r['guarantee'] or 'no runtime, so no promise'} {r['source']}"
                     for r in said]
    for r in (r for r in said if r["guarantee"]):  # each promise quoted whole, in its own words
        assert f"<q>{escape(r['guarantee'])}</q> <cite>{escape(r['source'])}</cite>" in html
    counted = [row for row in table["rows"][1:] if len(row) > 1]
    # a table written before agents were swept from outside has no swept_as: every row is the adapter's
    assert counted == [[row["variant"], row.get("swept_as", "adapter"), row["setting"], depth,
                        *(f"{counts[k]:,}" for k in SHOWN)]
                       for r in said for row in r["rows"] for depth, counts in row["depths"].items()]
    assert "Not swept" not in html


def test_a_report_of_a_sweep_with_no_matrix_or_runtimes_beside_it_says_they_were_not_swept(cli, book, tmp_path):
    page = tmp_path / "page.html"
    code, _, err = cli("report", str(book), "--out", str(page))
    assert code == 0 and "no fault matrix, no runtimes' table" in err
    html = page.read_text()
    assert f"Not swept: {book} holds no faults/matrix.json. <code>crashlab sweep --fault all --out {book}/faults" in html
    assert f"Not swept: {book} holds no frameworks/frameworks.json. <code>crashlab frameworks --out {book}/frameworks" \
        in html
    assert not Tables(html).of("matrix") and not Tables(html).of("runtimes")
    # named, they are drawn whatever directory they are in: the HTTP loop's matrix beside any sweep
    code, _, err = cli("report", str(book), "--out", str(page), "--faults", "results/examples")
    assert code == 0 and "the fault matrix of results/examples, no runtimes' table" in err
    [table] = Tables(page.read_text()).of("matrix")
    assert table["rows"][0][1:] == json.loads((ROOT / "results/examples/matrix.json").read_text())["columns"]
    assert set(KIND) == {outcome for outcome, _ in OUTCOMES}  # every outcome a matrix writes has its colour


MATRIX = json.dumps({"columns": ["crash"], "rows": [{"variant": "keys", "name": "+ keys",
                                                     "crash": {"outcome": "clean", "count": 0}}]})


@pytest.mark.parametrize(("option", "file", "text", "said"), [
    ("--faults", "matrix.json", MATRIX[:-1], "matrix.json: cannot read it: Expecting"),
    ("--faults", "matrix.json", "[]", "is not a fault matrix: Expected `object`, got `array`"),
    ("--faults", "matrix.json", MATRIX.replace('"clean"', '"boom"'), "Invalid enum value 'boom'"),
    ("--faults", "matrix.json", MATRIX.replace('"count": 0', '"count": true'), "Expected `int`, got `bool`"),
    ("--faults", "matrix.json", MATRIX.replace('"columns": ["crash"]', '"columns": ["crash", "timeout"]'),
     "is not a fault matrix: keys has no cell for timeout"),
    ("--faults", "matrix.json", MATRIX.replace('"variant": "keys", ', ""), "a row's variant must be text"),
    ("--faults", "matrix.json", b"\xff", "matrix.json: cannot read it: 'utf-8' codec"),
    ("--faults", "faults.json", "[]", "has no matrix.json: crashlab sweep --fault all --out"),
    ("--frameworks", "frameworks.json", '{"runtime": "dbos"}', "is not a runtimes' table: Expected `array`"),
    ("--frameworks", "frameworks.json", '[{"runtime": "dbos"}]', "Object missing required field `title`"),
    ("--frameworks", "frameworks.json", "", "frameworks.json: cannot read it: Expecting value"),
    ("--frameworks", "frameworks.txt", "", "has no frameworks.json: crashlab frameworks --out"),
])
def test_a_matrix_or_runtimes_table_that_cannot_be_read_exactly_is_refused_in_one_line(cli, tmp_path, option, file,
                                                                                    text, said):
    (tmp_path / file).write_bytes(text if isinstance(text, bytes) else text.encode())
    code, out, err = cli("report", "results", "--out", str(tmp_path / "page.html"), option, str(tmp_path))
    assert code == 2 and out == "" and said in err and err.count("\n") == 1, err
    assert not (tmp_path / "page.html").exists()


def test_a_broken_matrix_beside_the_results_is_refused_too_not_taken_for_none(cli, book, tmp_path):
    partial = tmp_path / "r"
    shutil.copytree(book, partial)
    (partial / "faults").mkdir()
    (partial / "faults" / "matrix.json").write_text('{"columns": 3}')
    code, _, err = cli("report", str(partial))
    assert code == 2 and f"{partial}/faults/matrix.json is not a fault matrix" in err and err.count("\n") == 1


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
    # the committed matrix of the same loop, and the runtimes' table, named from where make results wrote them
    assert cli("report", str(out), "--faults", "results/examples", "--frameworks", "results/frameworks")[0] == 0
    matrix = json.loads((ROOT / "results" / "examples" / "matrix.json").read_text())
    promised = json.loads((ROOT / "results" / "frameworks" / "frameworks.json").read_text())
    fetched: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("request", lambda request: fetched.append(request.url))
        page.goto((out / "report.html").as_uri())
        first = receipts(out)[0]
        page.click('[data-window="0"]')
        story = page.inner_text("#story")
        cells = page.eval_on_selector_all("#matrix table tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")
        quoted = page.eval_on_selector_all("#runtimes q", "qs => qs.map(q => q.innerText)")
        page.select_option("#fault", "timeout")  # a fault the sweep did not sweep: its column outlined, the rest dimmed
        chosen = page.eval_on_selector_all("#matrix th.chosen", "ths => ths.map(th => th.innerText)")
        dimmed = page.eval_on_selector_all("#matrix td.other", "tds => new Set(tds.map(td => td.dataset.fault)).size")
        unswept = page.inner_text("#unswept")
        page.select_option("#fault", "")
        page.select_option("#variant", "keyed")
        shown = page.eval_on_selector_all("#matrix tr[data-variant]", "rows => rows.filter(r => !r.hidden).map("
                                                                     "r => r.dataset.variant)")
        runtimes = page.eval_on_selector_all("#runtimes tbody[data-runtime]", "bodies => bodies.filter(b => !b.hidden).length")
        browser.close()
    assert first["harm"] in story and first["replay"] in story
    assert f"the story of {first['scenarios'][0]['id']}" in story
    assert cells == [["variant", *matrix["columns"]],
                     *([row["name"], *(worst(row[c]) for c in matrix["columns"])] for row in matrix["rows"])]
    assert quoted == [r["guarantee"] for r in promised if r["guarantee"]]  # an SDK with no runtime promises nothing
    assert chosen == ["timeout"] and dimmed == len(matrix["columns"]) - 1
    assert unswept.startswith("No timeline of any variant under timeout") and "outlined" in unswept
    assert shown == ["keyed"] and runtimes == 0
    assert fetched == [(out / "report.html").as_uri()]  # the page itself, and nothing else


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (.ci/run installs Debian's chromium)")
def test_a_fault_sweeps_timelines_and_its_matrix_column_answer_the_fault_filter_together(cli, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="no Playwright (crashlab[browser])")
    out = tmp_path / "r"
    code, _, err = cli("sweep", "--variant", "after-reply,keys", "--fault", "tracker-crash", "--commit", "two-step",
                       "--depth", "1", "--out", str(out))
    assert code == 0, err
    assert cli("report", str(out), "--faults", "results/faults")[0] == 0
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto((out / "report.html").as_uri())
        shown = {}
        for fault in ("tracker-crash two-step", "crash"):  # the sweep's fault as the matrix names it, then another
            page.select_option("#fault", fault)
            shown[fault] = (page.eval_on_selector_all("#tracks section", "ss => ss.filter(s => !s.hidden).length"),
                            page.eval_on_selector_all("#matrix th.chosen", "ths => ths.map(th => th.innerText)"),
                            page.is_visible("#unswept"))
        browser.close()
    assert shown == {"tracker-crash two-step": (2, ["tracker-crash two-step"], False), "crash": (0, ["crash"], True)}
