# Two commands set everything up on a fresh machine (Python 3.11 or 3.12):
#   make demo   install coach in .venv and run it on the traces recorded on an H200
#   make test   install coach with its test tools in .venv and run the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test install clean

$(BIN)/coach: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

install: $(BIN)/coach

demo: $(BIN)/coach
	$(BIN)/coach load tests/data/ncu_strided_copy/copy_strided_vs_coalesced.ncu-rep

test: $(BIN)/coach
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build dist *.egg-info
