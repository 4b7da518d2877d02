# axle: the two commands are `make run` (the main job on a bundled example) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE := axle/examples/mlp.mlir
CONFORMANCE ?= ../shared/conformance

.PHONY: run test setup conformance clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/axle opt $(EXAMPLE)
	$(BIN)/axle interpret $(EXAMPLE)
	$(BIN)/axle run $(EXAMPLE) --backend cpu --repeat 200 --buffers

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

conformance: $(STAMP)
	$(BIN)/axle conformance $(CONFORMANCE) --jobs 2

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
