# Two commands do all the set-up from a fresh clone:
#   make demo   - runs graphpe's main job on bundled data (no download)
#   make test   - runs the test suite (ruff + pytest)
#   make docs   - builds the documentation site into site/ in strict mode (any warning fails)
# Both create .venv. Where no torch is installed, the CPU build is installed first
# (TORCH_SPEC, TORCH_PIP_ARGS override it, e.g. TORCH_PIP_ARGS="--index-url
# https://download.pytorch.org/whl/cpu" on a machine whose pip would pick a CUDA build).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
STAMP := $(VENV)/.graphpe-installed
# pytest processes of `make test` (pytest-xdist; each test runs whole in one of them, idle ones
# take tests from busy ones): CI's machine has 2 cores
TEST_WORKERS ?= 2

.PHONY: demo test test-slow bench lint docs docs-serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	@$(BIN)/python -c "import torch" 2>/dev/null || \
		$(BIN)/python -m pip install -q $(TORCH_SPEC) $(TORCH_PIP_ARGS)
	# the build requirements first, so that the build (setup.py compiles the kernels ahead
	# of time, graphpe/ops/aot_build.py) runs in this venv instead of a fresh one
	$(BIN)/python -m pip install -q "setuptools>=77" "numba>=0.58" "numpy>=1.24" \
		"scipy>=1.10" "tqdm>=4.60"
	$(BIN)/python -m pip install -q --no-build-isolation -e ".[test,bench,docs]"
	# compile the kernels the extension does not hold (the models', other signatures) into
	# numba's disk cache now, side by side, rather than inside the demo's timings or the tests
	$(BIN)/graphpe warmup
	@touch $@

demo: $(STAMP)
	$(BIN)/graphpe demo

test: $(STAMP)
	$(BIN)/ruff check graphpe tests benchmarks examples docs/_build
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)
	$(BIN)/python benchmarks/precompute.py

lint: $(STAMP)
	$(BIN)/ruff check graphpe tests benchmarks examples docs/_build

# the API pages and the plots are generated during the build (docs/_build/); the tables are
# committed and checked by tests/docs (python benchmarks/tables.py --write-all rewrites them)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache results site
