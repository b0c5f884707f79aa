# Two set-up commands; both work on a fresh clone with nothing preinstalled.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install install-dev bench bench-loop clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-dev: $(BIN)/python
	$(BIN)/pip install -q -e ".[dev]"

demo: install
	$(BIN)/kintsugi demo

test: install-dev
	$(BIN)/python -m pytest -q

bench: install-dev
	$(BIN)/python benchmarks/guard_bench.py

bench-loop: install-dev
	$(BIN)/python benchmarks/loop_bench.py

clean:
	rm -rf .kintsugi
