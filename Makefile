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
# studies that measure on this machine: each holds the measuring lock exclusively (one at a time, even
# under make -j); the others hold it shared (beside each other, never beside a measurement)
MEASURING  := local_calibration sharif_gol sharif_triton local_jacobi2d sasidharan_sedov sasidharan_quicksilver \
              anger_skeletons
PROCESSED  := data/processed
LIB        := $(shell find perfmod -name '*.py' 2>/dev/null) pyproject.toml
PAPER      := $(wildcard data/paper/*.csv)
PLATFORMS  := $(wildcard data/platforms/*.toml)
DEVICES    := $(wildcard data/devices/*.csv)

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@printf "  \033[36m%-16s\033[0m %s\n" "repeat-<study>" "run a measuring study REPEAT=$(REPEAT) times from scratch; \
	headline figures of each run, median and range in $(PROCESSED)/repeat_<study>.nc (not part of all)"
	@printf "  %-16s %s\n" "" "<study>: $(MEASURING)"

setup: $(STAMP) ## create .venv and install perfmod with its dependencies (idempotent)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON_SYS) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

# One line per study: the make target, its dataset, what it shows.  `all` runs every one.
STUDIES :=
STUDIES += comm-models
comm-models: $(PROCESSED)/choi2020_comm_models.nc ## paper 000 Tables 2-5 and Figures 5, 7, 10 (model side)
STUDIES += calibration
calibration: $(PROCESSED)/local_calibration.nc ## ping-pong on this machine, fitted local platform
STUDIES += sharif-gol
sharif-gol: $(PROCESSED)/sharif_gol.nc ## paper 003 BSP model: Game of Life proxy fitted and validated here
STUDIES += sharif-triton
sharif-triton: $(PROCESSED)/sharif_triton.nc ## paper 003 TRITON study: flood proxy, K_w from one coarse run
STUDIES += end-to-end
end-to-end: $(PROCESSED)/choi2020_end_to_end.nc ## paper 000 QRoof kernels and per-iteration model (Figures 6, 8, 9, 11-13)
STUDIES += choi2020-traces
choi2020-traces: $(PROCESSED)/choi2020_traces.nc ## paper 000 Table 5 and Figures 7, 10 from the authors' Lassen traces (set PERFMOD_CHOI2020_TRACES)
STUDIES += what-if
what-if: $(PROCESSED)/choi2020_what_if.nc ## paper 000 §6 what-if studies (Figures 14, 15)
STUDIES += choi2019-minife
choi2019-minife: $(PROCESSED)/choi2019_minife.nc ## paper 002 MiniFE CG-loop model on Lassen and Bridges
STUDIES += local-jacobi2d
local-jacobi2d: $(PROCESSED)/local_jacobi2d.nc ## paper 000 end to end on Jacobi2D here: calibrated, profiled, validated; H100 kernels vs QRoof
STUDIES += sasidharan-sedov
sasidharan-sedov: $(PROCESSED)/sasidharan_sedov.nc ## paper 001 §5: Models A, B, C and Tables 5-7 on the Sedov proxy
STUDIES += sasidharan-quicksilver
sasidharan-quicksilver: $(PROCESSED)/sasidharan_quicksilver.nc ## paper 001 §6: Models 1, 2 on the Quicksilver proxy
STUDIES += anger-skeletons
anger-skeletons: $(PROCESSED)/anger_skeletons.nc ## paper 004: region models, skeletons of the HPCCG/MiniMD proxies, replay at scale

.PHONY: help setup all test test-all bench lint clean $(STUDIES)

all: setup $(STUDIES) ## run every study notebook (datasets in data/processed, figures in figures/)
	@$(PERFMOD) check  # one table of every study's state; fails when a measuring study has no headline

# every study notebook writes data/processed/<notebook>.nc; it reruns when the library or the data it reads change
$(PROCESSED)/%.nc: notebooks/%.ipynb $(STAMP) $(LIB) $(PAPER) $(PLATFORMS) $(DEVICES)
	$(LOCK) $(if $(filter $*,$(MEASURING)),,--shared) -- $(PERFMOD) run $< --canonical

# after calibration (it writes data/platforms/local.toml, the platform this study predicts with); the H100 data
$(PROCESSED)/local_jacobi2d.nc: $(PROCESSED)/local_calibration.nc $(wildcard data/raw/gpu-h100/*.json)

# repeats of the measuring studies (issue 15): make repeat-sharif_gol REPEAT=5.  Each run is the whole study from
# scratch in build/repeat/<study>/run<i>-<key>/ (never data/processed, figures or local.toml); perfmod repeat holds
# the measuring lock itself.  An interrupted repeat resumes its completed runs (same code); delete
# build/repeat/<study> to measure all of them afresh.  Not part of `all`: a repeat takes REPEAT times a study.
REPEAT     ?= 3
REPEATS    := $(addprefix repeat-,$(MEASURING))
.PHONY: $(REPEATS)
$(REPEATS): repeat-%: $(STAMP)
	$(PERFMOD) repeat $* -n $(REPEAT) --out build/repeat/$* --resume --canonical

test: setup ## run the test suite (fast tests + notebook smoke runs)
	$(PY) -m pytest -m "not slow" -q --benchmark-disable

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
