# Quick start: `make demo` and `make test` each bootstrap .venv on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: demo test bench clean venv live-deps

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,replay]'
	touch $(STAMP)

# The servers of the live engines (eventpy replay --live, tests/replay/test_live.py): installed with
# apt-get when missing and we are root; otherwise their tests are skipped.
LIVE_DEBS := activemq redis-server
live-deps:
	@missing=""; for p in $(LIVE_DEBS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "make live-deps: apt-get install$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
	      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
      || echo "make live-deps: could not install$$missing; the live engines' tests will be skipped"; \
	  else echo "make live-deps:$$missing missing (apt-get install$$missing); the live engines' tests will be skipped"; fi; \
	fi

demo: $(STAMP) live-deps
	$(BIN)/python -m eventpy demo
	$(BIN)/eventpyc --check examples/
	@for f in examples/*.epy; do echo "== $$f"; $(BIN)/python -m eventpy run $$f || exit 1; done

# two workers (pytest-xdist): the suite took ~15.7 min serially on 2 cores; every test starts
# its own servers on free ports, and one run with -n 2 passed all 2,218 tests under a load of 8
test: $(STAMP) live-deps
	$(BIN)/python -m pytest -n 2 --durations=15

bench: $(STAMP)
	$(BIN)/python tools/bench/matching.py --quick
	$(BIN)/python tools/bench/updates.py --quick
	$(BIN)/python tools/bench/hops.py --quick
	$(BIN)/python tools/bench/embedded.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
