# Quick start: `make demo` and `make test` each bootstrap .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: demo test bench clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,replay]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m eventpy demo
	$(BIN)/eventpyc --check examples/
	@for f in examples/*.epy; do echo "== $$f"; $(BIN)/python -m eventpy run $$f || exit 1; done

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python tools/bench/matching.py --quick
	$(BIN)/python tools/bench/updates.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
