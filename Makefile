# perfmod: every study from a fresh clone.  `make` lists the targets.
#   make all    set up .venv, run every study notebook (datasets + figures)
#   make test   set up .venv, run the test suite (what CI runs)

SHELL      := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON_SYS ?= python3
VENV       := .venv
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.perfmod-installed
NBRUN      := $(PY) -m perfmod.notebooks run
PROCESSED  := data/processed
LIB        := $(shell find perfmod -name '*.py' 2>/dev/null) pyproject.toml
PAPER      := $(wildcard data/paper/*.csv)
PLATFORMS  := $(wildcard data/platforms/*.toml)

.PHONY: help setup all test test-all bench lint clean comm-models calibration sharif-gol sasidharan-sedov \
        sasidharan-quicksilver

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(STAMP) ## create .venv and install perfmod with its dependencies (idempotent)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

all: setup comm-models calibration sharif-gol sasidharan-sedov sasidharan-quicksilver ## run every study notebook (datasets in data/processed, figures in figures/)

comm-models: $(PROCESSED)/choi2020_comm_models.nc ## paper 000 Tables 2-5 and Figures 5, 7, 10 (model side)
calibration: $(PROCESSED)/local_calibration.nc ## ping-pong on this machine, fitted local platform
sharif-gol: $(PROCESSED)/sharif_gol.nc ## paper 003 BSP model: Game of Life proxy fitted and validated here
sasidharan-sedov: $(PROCESSED)/sasidharan_sedov.nc ## paper 001 §5: Models A, B, C and Tables 5-7 on the Sedov proxy
sasidharan-quicksilver: $(PROCESSED)/sasidharan_quicksilver.nc ## paper 001 §6: Models 1, 2 on the Quicksilver proxy

$(PROCESSED)/choi2020_comm_models.nc: notebooks/choi2020_comm_models.ipynb $(STAMP) $(LIB) $(PAPER) $(PLATFORMS)
	$(NBRUN) $< -p dataset_path ../$@

$(PROCESSED)/local_calibration.nc: notebooks/local_calibration.ipynb $(STAMP) $(LIB)
	$(NBRUN) $< -p dataset_path ../$@

$(PROCESSED)/sharif_gol.nc: notebooks/sharif_gol.ipynb $(STAMP) $(LIB) $(PAPER)
	$(NBRUN) $< -p dataset_path ../$@

$(PROCESSED)/sasidharan_sedov.nc: notebooks/sasidharan_sedov.ipynb $(STAMP) $(LIB) $(PAPER)
	$(NBRUN) $< -p dataset_path ../$@

$(PROCESSED)/sasidharan_quicksilver.nc: notebooks/sasidharan_quicksilver.ipynb $(STAMP) $(LIB) $(PAPER)
	$(NBRUN) $< -p dataset_path ../$@

test: setup ## run the test suite (fast tests + notebook smoke runs)
	$(PY) -m pytest -m "not slow" -q --benchmark-disable

test-all: setup ## run every test, slow ones included
	$(PY) -m pytest -q --benchmark-disable

bench: setup ## run the benchmarks (pytest-benchmark; tests/test_bench*.py, one file per topic)
	$(PY) -m pytest -q tests/test_bench*.py --benchmark-only --benchmark-columns=min,median,mean,ops,rounds

lint: setup ## ruff
	$(VENV)/bin/ruff check perfmod tests

clean: ## remove generated outputs (datasets, figures, executed notebooks); keeps .venv and data/raw
	rm -f $(PROCESSED)/*.nc
	find figures -name '*.png' -delete
	rm -rf build/executed notebooks/executed
