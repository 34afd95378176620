# The README's two commands, `make sweep` and `make test`, do all the set-up: on first use they create .venv
# and install crashlab into it (editable), each with the extras its target needs and no more, so `make sweep`
# on a fresh clone installs crashlab's own few dependencies and prints the book's table in seconds. The
# runtimes (1 GB of them) come with `make results` and `make test-slow`, which sweep them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet --disable-pip-version-check
# What each target needs installed, a marker file each; installing a set adds to what the venv holds.
BASE := $(VENV)/.installed-base
TESTING := $(VENV)/.installed-test
LINTING := $(VENV)/.installed-lint
DOCS := $(VENV)/.installed-docs
EVERYTHING := $(VENV)/.installed-all
# The extras the fast suite imports (the service's MCP front end and its model's SDKs, the picture, Dask, the
# power-cut layer).
TEST_EXTRAS := test,mcp,model,plot,dask,fuse

.PHONY: sweep results test test-slow lint docs bench clean

$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

$(TESTING): $(BASE)
	$(PIP) -e '.[$(TEST_EXTRAS)]'
	touch $@

$(LINTING): $(EVERYTHING)
	$(PIP) -e '.[$(TEST_EXTRAS),frameworks,browser,examples,lint]'
	touch $@

$(DOCS): $(BASE)
	$(PIP) -e '.[docs]'
	touch $@

$(EVERYTHING): $(TESTING)
	@echo "installing every agent runtime crashlab sweeps (about 1 GB; a few minutes on a fresh machine)"
	$(PIP) -e '.[$(TEST_EXTRAS),frameworks,browser,examples]'
	touch $@

# The TypeScript agent of examples/agents/ and its one package (the openai npm package), from the npm registry into a
# folder of its own, as its lock file pins it. Without Node here, its test skips, and says so.
NODE_AGENT := examples/agents/node/node_modules/.installed

$(NODE_AGENT): examples/agents/node/package-lock.json
	@command -v npm > /dev/null || { echo "no npm here: the Node agent's test skips"; exit 0; } \
		&& cd examples/agents/node && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed

# CrewAI requires mcp<2 and the mcp extra mcp>=2, so no one environment holds both: CrewAI's tests
# run in one of their own.
CREWAI_VENV := .venv-crewai
CREWAI := $(CREWAI_VENV)/.installed

$(CREWAI): pyproject.toml
	$(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test,crewai]'
	touch $@

# The book's table, swept two crashes deep and checked against the golden file (it writes nothing: `make results`
# writes results/); then what `make results` would add.
sweep: $(BASE)
	$(BIN)/crashlab sweep --variant all --check results/book.txt
	@echo
	@echo "make results regenerates the rest of results/ (nearly all of its time installing and sweeping the agent"
	@echo "runtimes: see the README): the agent's own loop against every tracker, every fault at each of its settings and"
	@echo "their matrix, the HTTP loop of examples/ under every fault, LangGraph and DBOS under every fault, every"
	@echo "runtime's table, and the pictures."

# Everything results/ holds: the book's table, checked against the golden file, with every scenario written to
# results/; then the agent's own loop against every tracker, on the triage job and the two harder ones, each
# checked against its golden file; every fault at each of its settings, with the matrix of worst outcomes and
# its picture (results/faults/); the HTTP loop of examples/ against crashlab's service, under every fault that
# reaches the service (results/examples/), and so LangGraph and DBOS, whose tools call it too, at depth 1
# (results/frameworks/); every installed agent runtime's table, with the agents of examples/agents/ swept from
# outside (results/frameworks/frameworks.txt); and the pictures of both sweeps. Each step says what it does; each
# sweep shows its progress on stderr.
# Every file it writes is the same on every run, so a run on an unchanged checkout leaves git with nothing to commit.
STEP = @echo "== results: $(1)" >&2
results: $(EVERYTHING) $(NODE_AGENT)
	$(call STEP,1/11 the book's table)
	$(BIN)/crashlab sweep --variant all --check results/book.txt --out results > /dev/null
	$(call STEP,2/11 the agent's loop against every tracker)
	$(BIN)/crashlab sweep --loop agent --tracker all --check results/agent/golden.txt --out results/agent > /dev/null
	$(call STEP,3/11 the agent's loop on the server-dies job)
	$(BIN)/crashlab sweep --loop agent --job server-dies --check results/agent/server-dies.txt > /dev/null
	$(call STEP,4/11 the agent's loop on the approval job)
	$(BIN)/crashlab sweep --loop agent --job approval --check results/agent/approval.txt > /dev/null
	$(call STEP,5/11 every fault at each of its settings and their matrix)
	$(BIN)/crashlab sweep --fault all --out results/faults > /dev/null
	$(call STEP,6/11 the HTTP loop of examples/ under every fault that reaches the service)
	$(BIN)/crashlab sweep --loop examples/http_loop.py:plain,keyed --effects examples/http_loop.yaml --fault all \
		--out results/examples > /dev/null
	$(call STEP,7/11 LangGraph killed for real under every fault)
	$(BIN)/crashlab sweep --loop langgraph --variant langgraph-plain,langgraph-keyed,langgraph-v1,langgraph-exit --kill \
		--depth 1 --fault all --out results/frameworks/langgraph > /dev/null
	$(call STEP,8/11 DBOS killed for real under every fault)
	$(BIN)/crashlab sweep --loop dbos --kill --depth 1 --fault all --out results/frameworks/dbos > /dev/null
	$(call STEP,9/11 every installed agent runtime)
	$(BIN)/crashlab frameworks --depth 1 --out results/frameworks > /dev/null
	$(call STEP,10/11 the book's picture)
	$(BIN)/crashlab plot --out results/sweep.png
	$(call STEP,11/11 the agent's picture)
	$(BIN)/crashlab plot --loop agent --out results/agent/sweep.png

# The fast suite; `make test-slow` runs the rest: real processes killed at every crash point, and
# whole sweeps on SQLite. Both run on every core (pytest-xdist).
test: $(TESTING)
	$(BIN)/pytest -q -n auto -m "not slow"

# The slower suites (real processes killed at every crash point, file-store equivalence, a real
# terminal, every agent runtime swept, the agents of examples/agents/ swept from outside): CI runs them after `make test`.
test-slow: $(EVERYTHING) $(CREWAI) $(NODE_AGENT)
	$(BIN)/pytest -q -n auto -m slow --durations=15
	$(CREWAI_VENV)/bin/pytest -q -m slow tests/test_crewai.py

# The linter and the type checker, as pyproject.toml configures them.
lint: $(LINTING)
	$(BIN)/ruff check crashlab tests scripts examples docs/hooks
	$(BIN)/mypy

# The documentation site, built strictly (any warning fails); it lands in build/site.
docs: $(DOCS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(EVERYTHING) $(NODE_AGENT)
	$(BIN)/python scripts/bench.py --plot docs/speed.png

clean:
	rm -rf $(VENV) $(CREWAI_VENV) build *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
