# The README's two commands, `make sweep` and `make test`, do all the set-up: on first use they
# create .venv and install crashlab into it (editable), with the extras the target needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: sweep test test-slow lint docs bench clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,lint,docs,plot,dask,frameworks,mcp,fuse]'
	touch $@

# CrewAI requires mcp<2 and the mcp extra mcp>=2, so no one environment holds both: CrewAI's tests
# run in one of their own.
CREWAI_VENV := .venv-crewai
CREWAI := $(CREWAI_VENV)/.installed

$(CREWAI): pyproject.toml
	$(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/pip install --quiet --upgrade pip
	$(CREWAI_VENV)/bin/pip install --quiet -e '.[test,crewai]'
	touch $@

# The book's table, checked against the golden file, with every scenario written to results/; then
# the agent's own loop against every tracker, on the triage job and the two harder ones, each
# checked against its golden file; every fault at each of its settings, with the matrix of worst
# outcomes and its picture (results/faults/); the HTTP loop of examples/ against crashlab's service,
# under every fault that reaches the service (results/examples/), and so LangGraph and DBOS, whose
# tools call it too, at depth 1 (results/frameworks/); every installed agent runtime's table
# (results/frameworks/frameworks.txt); and the pictures of both sweeps.
# Every file it writes is the same on every run, so a sweep of an unchanged checkout leaves git with
# nothing to commit.
sweep: $(INSTALLED)
	$(BIN)/crashlab sweep --variant all --check results/book.txt --out results
	$(BIN)/crashlab sweep --loop agent --tracker all --check results/agent/golden.txt --out results/agent
	$(BIN)/crashlab sweep --loop agent --job server-dies --check results/agent/server-dies.txt > /dev/null
	$(BIN)/crashlab sweep --loop agent --job approval --check results/agent/approval.txt > /dev/null
	$(BIN)/crashlab sweep --fault all --out results/faults > /dev/null
	$(BIN)/crashlab sweep --loop examples/http_loop.py:plain,keyed --effects examples/http_loop.yaml --fault all \
		--out results/examples > /dev/null
	$(BIN)/crashlab sweep --loop langgraph --variant langgraph-plain,langgraph-keyed,langgraph-v1,langgraph-exit --kill \
		--depth 1 --fault all --out results/frameworks/langgraph > /dev/null
	$(BIN)/crashlab sweep --loop dbos --kill --depth 1 --fault all --out results/frameworks/dbos > /dev/null
	$(BIN)/crashlab frameworks --depth 1 --out results/frameworks > /dev/null
	$(BIN)/crashlab plot --out results/sweep.png
	$(BIN)/crashlab plot --loop agent --out results/agent/sweep.png

# The fast suite; `make test-slow` runs the rest: real processes killed at every crash point, and
# whole sweeps on SQLite. Both run on every core (pytest-xdist).
test: $(INSTALLED)
	$(BIN)/pytest -q -n auto -m "not slow"

# The slower suites (real processes killed at every crash point, file-store equivalence, a real
# terminal, every agent runtime swept): CI runs them after `make test`.
test-slow: $(INSTALLED) $(CREWAI)
	$(BIN)/pytest -q -n auto -m slow --durations=15
	$(CREWAI_VENV)/bin/pytest -q -m slow tests/test_crewai.py

# The linter and the type checker, as pyproject.toml configures them.
lint: $(INSTALLED)
	$(BIN)/ruff check crashlab tests scripts examples docs/hooks
	$(BIN)/mypy

# The documentation site, built strictly (any warning fails); it lands in build/site.
docs: $(INSTALLED)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(INSTALLED)
	$(BIN)/python scripts/bench.py --plot docs/speed.png

clean:
	rm -rf $(VENV) $(CREWAI_VENV) build *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
