# gradmc: one-command entry points. Every target sets up .venv first (pinned by constraints.txt).
PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.gradmc-installed
CORES   ?= 2
PROFILE ?= workflow/profiles/local
CONFIG  ?= quick
SMK     := $(BIN)/snakemake --profile $(PROFILE) --cores $(CORES)

.PHONY: help venv test test-full lint reproduce reproduce-paper reproduce-smoke bench report unlock clean-results

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch pinned exactly (constraints.txt): a range would pull a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)  ## create .venv and install gradmc with the pinned versions

test: $(STAMP)  ## run the test suite (about 7 minutes on 2 cores)
	$(BIN)/python -m pytest -q

test-full: $(STAMP)  ## run every test, the slow ones too
	$(BIN)/python -m pytest -q -m ''

lint: $(STAMP)  ## ruff and snakemake --lint
	$(BIN)/ruff check .
	$(BIN)/snakemake --lint

reproduce: $(STAMP)  ## run the whole pipeline with config/quick.yaml into results/
	$(SMK) --configfile config/quick.yaml

reproduce-paper: $(STAMP)  ## run the whole pipeline with the papers' settings (GPU cluster scale)
	$(SMK) --configfile config/paper.yaml

reproduce-smoke: $(STAMP)  ## tiny end-to-end run (seconds, into results/smoke/), what the tests run
	$(SMK) --configfile config/smoke.yaml

bench: $(STAMP)  ## benchmarks, written to results/bench/
	$(BIN)/python -m gradmc.cli bench --out results/bench

report: $(STAMP)  ## HTML report of the quick results (figures, tables, claims) -> results/report.html
	$(SMK) --configfile config/$(CONFIG).yaml --report results/report.html

unlock: $(STAMP)  ## remove a stale Snakemake lock left by a killed run
	$(BIN)/snakemake --unlock --cores $(CORES)

clean-results:  ## delete everything under results/ (generated outputs only)
	find results -mindepth 1 -not -name .gitkeep -not -name README.md -delete
