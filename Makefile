# gradmc: one-command entry points. Every target sets up .venv first (pinned by constraints.txt).
#   make PY=/path/to/python3.11 ...   the Python for .venv (default: python3.11, else python3.13, python3.12 or
#                                     python3 if it is at least 3.11)
#   make TORCH=cu126 venv             the PyTorch build: cpu (default) or a CUDA build of download.pytorch.org
#   make CORES=8 reproduce            Snakemake cores (default: all of this machine's)
ifndef PY
PY := $(shell for p in python3.11 python3.13 python3.12 python3; do \
	  "$$p" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && { echo "$$p"; break; }; done)
endif
ifndef CORES
CORES := $(shell nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
endif
# pytest-xdist workers of `make test` (one torch thread each, tests/conftest.py): the cores, at most 4
TEST_WORKERS ?= $(shell n=$(CORES); [ "$$n" -gt 4 ] && n=4; echo $$n)
TORCH   ?= cpu
TORCH_VERSION := $(shell sed -n 's/^torch==//p' constraints.txt)
# PyPI's Linux torch wheel is the CUDA build (several GB); the CPU-only and the other CUDA builds live on the
# PyTorch index as torch==<version>+<build>. PyPI's macOS wheels are the CPU build already.
ifeq ($(shell uname -s)-$(TORCH),Darwin-cpu)
TORCH_REQ   := torch==$(TORCH_VERSION)
TORCH_INDEX :=
else
TORCH_REQ   := torch==$(TORCH_VERSION)+$(TORCH)
TORCH_INDEX := --index-url https://download.pytorch.org/whl/$(TORCH)
endif
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.gradmc-installed
DOCS_STAMP := $(VENV)/.gradmc-docs-installed
PROFILE ?= workflow/profiles/default
CONFIG  ?= quick
SMK     := $(BIN)/snakemake --workflow-profile $(PROFILE) --cores $(CORES)
# a CONFIG that names no file stops with one line, not a Snakemake traceback
CHECK_CONFIG = @test -f config/$(CONFIG).yaml || { echo "make: config file config/$(CONFIG).yaml not found (CONFIG names a file in config/: $$(ls config | sed -n 's/\.yaml$$//p' | tr '\n' ' '))" >&2; exit 2; }

.PHONY: help venv data test test-full docs lint reproduce why reproduce-paper reproduce-smoke plan-paper stage-times bench bench-peers gpu-check report unlock clean-results

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || { \
	  if [ -z "$(PY)" ]; then \
	    echo "make: no Python >= 3.11 found. On PATH:" >&2; \
	    for p in python3.13 python3.12 python3.11 python3; do \
	      v=$$(command -v "$$p" >/dev/null && "$$p" --version 2>&1 || echo 'not found'); \
	      printf '  %-10s %s\n' "$$p" "$$v" >&2; done; \
	    echo "gradmc needs Python >= 3.11 (tested on 3.11): install it, or run make PY=/path/to/python3.11" >&2; \
	    exit 1; fi; \
	  "$(PY)" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	    echo "make: PY=$(PY) is $$("$(PY)" --version 2>&1); gradmc needs Python >= 3.11 (tested on 3.11)" >&2; \
	    exit 1; }; \
	  "$(PY)" -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch pinned exactly (constraints.txt), the build TORCH names: a wheel pip already has (a find-links folder,
	# no network), else the PyTorch index; its dependencies come with the install below, from the usual index.
	$(BIN)/python -m pip install --quiet --no-deps --no-index '$(TORCH_REQ)' 2>/dev/null \
	  || $(BIN)/python -m pip install --quiet --no-deps $(TORCH_INDEX) '$(TORCH_REQ)'
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)  ## create .venv and install gradmc with the pinned versions (TORCH=cpu, or e.g. TORCH=cu126)

data: $(STAMP)  ## fetch the data files config/$(CONFIG).yaml reads into $GRADMC_DATA_DIR (default ~/.cache/gradmc)
	$(BIN)/gradmc data fetch --config config/$(CONFIG).yaml

test: $(STAMP)  ## the default suite: unit, exactness and CLI tests, slow ones excluded (about 4 minutes on 2 cores)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=15

test-full: $(STAMP)  ## every test, the slow ones too (the smoke pipeline, interrupts, multi-node, cache resume)
	$(BIN)/python -m pytest -q -m '' --durations=15

# the docs extra (mkdocs, material, mkdocstrings), pinned by constraints.txt like the rest
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)  ## the documentation site -> site/ (mkdocs --strict, offline; reference pages generated from the code)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

lint: $(STAMP)  ## ruff and snakemake --lint (less its conda/container lint: workflow/lint.py)
	$(BIN)/ruff check .
	$(BIN)/python workflow/lint.py

RERUN   := $(BIN)/python workflow/rerun.py

reproduce: $(STAMP)  ## run the whole pipeline with config/$(CONFIG).yaml (CONFIG=quick by default) into results/$(CONFIG)/, then its results page results.md
	$(CHECK_CONFIG)
	@$(RERUN) plan --configfile config/$(CONFIG).yaml --cores $(CORES) --workflow-profile $(PROFILE)
	@start=$$(date +%s); $(SMK) --configfile config/$(CONFIG).yaml; status=$$?; \
	  $(RERUN) report --configfile config/$(CONFIG).yaml --since $$start; \
	  if [ $$status -eq 0 ]; then $(BIN)/python -m gradmc.cli docs results/$(CONFIG) || status=$$?; fi; exit $$status

why: $(STAMP)  ## what `make reproduce` would run now and why (code files, config keys, inputs), and cached shards
	$(CHECK_CONFIG)
	@$(RERUN) plan --configfile config/$(CONFIG).yaml --cores $(CORES) --workflow-profile $(PROFILE)

reproduce-paper: $(STAMP)  ## run the whole pipeline with the papers' settings (GPU cluster scale) into results/paper/
	$(SMK) --configfile config/paper.yaml

plan-paper: $(STAMP)  ## compute plan of config/paper.yaml: every job on a short slice, measured (<= 20 min, 2 cores) -> results/paper/plan.md
	$(BIN)/python -m gradmc.cli plan --config config/paper.yaml --out results/paper

reproduce-smoke: $(STAMP)  ## tiny end-to-end run (a few minutes, into results/smoke/), what the tests run
	$(SMK) --configfile config/smoke.yaml

stage-times: $(STAMP)  ## per-stage wall times of the last pipeline run (from Snakemake's log) -> stdout
	$(BIN)/python workflow/stage_times.py

bench: $(STAMP)  ## benchmarks, written to results/bench/ (the DISCS comparison too when DISCS_PYTHON is set)
	$(BIN)/python -m gradmc.cli bench --out results/bench $(if $(DISCS_PYTHON),--discs-python "$(DISCS_PYTHON)")

bench-peers: $(STAMP)  ## gradmc against Google's DISCS: make bench-peers DISCS_PYTHON=<jax venv>/bin/python -> results/bench/peers.md
	$(BIN)/python -m gradmc.cli bench --suite peers --out results/bench $(if $(DISCS_PYTHON),--discs-python "$(DISCS_PYTHON)") \
		$(if $(DISCS_HARNESS),--discs-harness "$(DISCS_HARNESS)")

gpu-check: $(STAMP)  ## CUDA check, <= 5 min on one GPU: smoke DAG cpu vs cuda, GWG steps/s -> results/gpu-check/
	$(BIN)/python -m gradmc.bench.gpu_check --out results/gpu-check --cores $(CORES)

report: $(STAMP)  ## HTML report of a finished run of config/$(CONFIG).yaml -> results/$(CONFIG)/report.html
	$(CHECK_CONFIG)
	@test -f results/$(CONFIG)/claims.md || { echo "make: no finished $(CONFIG) run in results/$(CONFIG)/ (run make reproduce CONFIG=$(CONFIG) first)" >&2; exit 2; }
	$(SMK) --configfile config/$(CONFIG).yaml --report results/$(CONFIG)/report.html

unlock: $(STAMP)  ## remove a stale Snakemake lock left by a killed run
	$(BIN)/snakemake --unlock --cores $(CORES)

clean-results:  ## delete everything under results/ (generated outputs only)
	find results -mindepth 1 -not -name .gitkeep -not -name README.md -delete
