# perfmod: every study from a fresh clone.  `make` lists the targets.
#   make all    set up .venv, run every study notebook (datasets + figures)
#   make test   set up .venv, run the test suite (what CI runs)
#   make repeat-<study>   run a measuring study REPEAT times from scratch: headline median and range

SHELL      := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON_SYS ?= python3
VENV       := .venv
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.perfmod-installed
PERFMOD    := $(VENV)/bin/perfmod
LOCK       := $(PY) -m perfmod.measure.lock
PROCESSED  := data/processed
LIB        := $(shell find perfmod -name '*.py' 2>/dev/null) pyproject.toml
PAPER      := $(wildcard data/paper/*.csv)
PLATFORMS  := $(wildcard data/platforms/*.toml)
DEVICES    := $(wildcard data/devices/*.csv)
# Extra-P (PyPI extrap), the reference modeler of the modeling_benchmark study, in an environment of its own: it pins
# NumPy 1.x and Qt, which perfmod's environment does not take (perfmod.models.compute.extrap_runner)
EXTRAP_VENV  := .venv-extrap
EXTRAP_STAMP := $(EXTRAP_VENV)/.extrap-tried
EXTRAP_PIN   := extrap==4.2.5

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  \033[36m%-24s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@printf "  \033[36m%-24s\033[0m %s\n" "repeat-<study>" "run a measuring study REPEAT=$(REPEAT) times from scratch; \
	headline figures of each run, median and range in $(PROCESSED)/repeat_<study>.nc (not part of all)"
	@printf "  %-24s %s\n" "" "<study>: $(MEASURING)"

setup: $(STAMP) $(EXTRAP_STAMP) ## create .venv and install perfmod with its dependencies, and .venv-extrap (idempotent)

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "perfmod setup: creating $(VENV) with $(PYTHON_SYS)"; $(PYTHON_SYS) -m venv $(VENV); }
	@echo "perfmod setup: upgrading pip"
	@$(PY) -m pip install --quiet --upgrade pip
	@echo "perfmod setup: installing perfmod and its dependencies into $(VENV) (a few minutes on a fresh machine;" \
	      "one line per package)"
	@$(PY) -m pip install --progress-bar off -e '.[dev]' \
	  | { grep --line-buffered -E '^(Collecting|Successfully)' || true; } | sed -u 's/^/  /'
	@echo "perfmod setup: done"
	@touch $@

extrap-env: ## (re)build .venv-extrap with Extra-P alone (modeling_benchmark and perfmod model --extrap run it)
	@rm -f $(EXTRAP_STAMP)
	@$(MAKE) --no-print-directory $(EXTRAP_STAMP)

# tried once per checkout by setup, not fatal: without it modeling_benchmark leaves Extra-P out and says so in its
# dataset; .extrap-installed marks an environment that has it (perfmod.models.compute.extrap_runner)
$(EXTRAP_STAMP):
	@echo "perfmod setup: installing $(EXTRAP_PIN) into $(EXTRAP_VENV) (Extra-P, for modeling_benchmark)"
	@rm -f $(EXTRAP_VENV)/.extrap-installed
	@if { test -x $(EXTRAP_VENV)/bin/python || $(PYTHON_SYS) -m venv $(EXTRAP_VENV); } \
	    && $(EXTRAP_VENV)/bin/python -m pip install --quiet --progress-bar off '$(EXTRAP_PIN)'; then \
	  touch $(EXTRAP_VENV)/.extrap-installed; \
	else \
	  echo "perfmod setup: WARNING: Extra-P could not be installed into $(EXTRAP_VENV); modeling_benchmark" \
	       "will run without it (make extrap-env tries again)"; \
	fi
	@mkdir -p $(EXTRAP_VENV) && touch $@

# The studies: the notebooks' metadata is the one list (perfmod.workflow.catalog; a study is its module, its
# notebook and its note).  build/studies.mk, remade whenever a notebook changes, defines STUDIES, MEASURING (the
# studies that measure this machine: each holds the measuring lock exclusively, one at a time even under make -j;
# the others hold it shared, beside each other, never beside a measurement), ALIASES (older target names) and one
# target per study, named as its notebook: make sharif_gol.
STUDIES_MK := build/studies.mk
$(STUDIES_MK): notebooks $(wildcard notebooks/*.ipynb) perfmod/workflow/catalog.py  # the folder: a notebook removed
	@mkdir -p $(@D)
	@PYTHONPATH=$(CURDIR) $(PYTHON_SYS) -m perfmod.workflow.catalog make > $@.tmp && mv $@.tmp $@
include $(STUDIES_MK)

.PHONY: help setup extrap-env all test test-all bench lint clean $(STUDIES) $(ALIASES)

all: setup $(STUDIES) ## run every study notebook (datasets in data/processed, figures in figures/)
	@$(PERFMOD) check || echo "make all: a measuring study has no headline (see its detail above); \
	\`perfmod check\` exits non-zero until it is rerun on a quiet machine"  # the table of every study's state

# every study notebook writes data/processed/<notebook>.nc; it reruns when the library or the data it reads change
$(PROCESSED)/%.nc: notebooks/%.ipynb $(STAMP) $(LIB) $(PAPER) $(PLATFORMS) $(DEVICES)
	$(LOCK) $(if $(filter $*,$(MEASURING)),,--shared) -- $(PERFMOD) run $< --canonical

# after calibration (it writes data/platforms/local.toml, the platform this study predicts with); the H100 data
$(PROCESSED)/local_jacobi2d.nc: $(PROCESSED)/local_calibration.nc $(wildcard data/raw/gpu-h100/*.json)

# repeats of the measuring studies (issue 15): make repeat-sharif_gol REPEAT=5 (repeat-<study>, as the notebook).  Each run is the whole study from
# scratch in build/repeat/<study>/run<i>-<key>/ (never data/processed, figures or local.toml); perfmod repeat holds
# the measuring lock itself.  An interrupted repeat resumes its completed runs (same code); delete
# build/repeat/<study> to measure all of them afresh.  Not part of `all`: a repeat takes REPEAT times a study.
REPEAT     ?= 3
REPEATS    := $(addprefix repeat-,$(MEASURING))
.PHONY: $(REPEATS)
$(REPEATS): repeat-%: $(STAMP)
	$(PERFMOD) repeat $* -n $(REPEAT) --out build/repeat/$* --resume --canonical

test: setup ## run the test suite (fast tests + notebook smoke runs)
	$(PY) -m pytest -m "not slow" -q --benchmark-disable --durations=15

test-all: setup ## run every test, slow ones included
	$(PY) -m pytest -q --benchmark-disable

bench: setup ## run the benchmarks (pytest-benchmark; tests/test_bench*.py, one file per topic)
	$(PY) -m pytest -q tests/test_bench*.py --benchmark-only --benchmark-columns=min,median,mean,ops,rounds

.PHONY: docs
docs: setup ## build the documentation site into build/docs/html from what make all wrote (warnings are errors)
	@test $(VENV)/.perfmod-docs-installed -nt pyproject.toml || \
		{ $(PY) -m pip install --quiet -e '.[docs]' && touch $(VENV)/.perfmod-docs-installed; }
	$(PY) -m sphinx -W --keep-going -q -b html docs build/docs/html
	@echo "documentation: build/docs/html/index.html"

lint: setup ## ruff
	$(VENV)/bin/ruff check perfmod tests

clean: ## remove generated outputs (datasets, figures, executed notebooks); keeps .venv and data/raw
	rm -f $(PROCESSED)/*.nc
	find figures -name '*.png' -delete
	rm -rf build/executed notebooks/executed
