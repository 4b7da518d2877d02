# axle: the two commands are `make run` (the main job on a bundled example) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE := axle/examples/gpt2_block.mlir
CONFORMANCE ?= ../shared/conformance

.PHONY: run test setup conformance bench clean jax-programs fuzz

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# the main job (axle/tools/demo.py): compile the bundled GPT-2 style block for the CPU, check it
# against the interpreter, time it, print the fusion summary, draw it and trace it (build/demo/)
run: $(STAMP)
	$(BIN)/axle demo --model $(EXAMPLE) --out build/demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

# fuzz campaigns (tests/fuzz/fuzz_harness.py): parser, differential, bad arguments, cache faults,
# threads, fork; findings (minimized) go to build/fuzz; `make test` runs a short round and
# replays tests/fuzz/corpus
FUZZ_SECONDS ?= 1800
fuzz: $(STAMP)
	$(BIN)/python tests/fuzz/fuzz_harness.py --seconds $(FUZZ_SECONDS) --out build/fuzz --json build/fuzz/summary.json

bench: $(STAMP)
	$(BIN)/axle bench --write benchmarks/RESULTS.md

conformance: $(STAMP)
	$(BIN)/axle conformance $(CONFORMANCE) --jobs 2

# every program of tests/jax_programs (make test runs the representative part): compiled by
# axle for the CPU and compared with XLA; see docs/jax-programs.md
jax-programs: $(STAMP)
	AXLE_JAX_PROGRAMS=all $(BIN)/python -m pytest -q -n 2 tests/jax_programs

# docs/images/roofline.png (README, Profiling): `axle explain` on the JAX transformer block;
# docs/images/transformer_graph.svg (README, Tools): `axle viz` on it
.PHONY: docs-images
docs-images: $(STAMP)
	mkdir -p docs/images build/docs-images
	$(BIN)/python -m axle explain jax:transformer_block -o build/docs-images/roofline.html \
		--png docs/images/roofline.png --repeat 50
	$(BIN)/python -m axle viz jax:transformer_block -o docs/images/transformer_graph.svg --no-tooltips

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
