# PALs Explorer — `make app` sets everything up and opens the explorer; `make test` sets up and runs the tests.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
HOST    ?= 127.0.0.1
PORT    ?= 8501
# The tests run on 2 pytest-xdist workers (the machine and CI have 2 cores); worksteal hands a worker that is done
# half of the other's queue, so one long test at the end of a file does not leave a core idle.
WORKERS ?= 2
PYTEST  := $(BIN)/python -m pytest -n $(WORKERS) --dist worksteal

.PHONY: setup app test test-fast lint format bench budget clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# The CPU build of torch from local disk first, so nothing pulls a CUDA build.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[all,dev]'
	touch $(STAMP)

setup: $(STAMP)

app: $(STAMP)
	$(BIN)/streamlit run app.py --server.address $(HOST) --server.port $(PORT)

test: $(STAMP)
	$(PYTEST) -q -ra

test-fast: $(STAMP)
	$(PYTEST) -q -m "not slow and not browser and not postgres"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

budget: $(STAMP)
	$(BIN)/pals-budget --tasks 8 --budget 1.13

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
