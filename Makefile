# Two commands set everything up on a fresh machine (Python 3.11 or 3.12):
#   make demo   install coach in .venv and walk through traces recorded on an NVIDIA H200 (no GPU needed)
#   make test   install coach with its test tools in .venv and run the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# coach alone: what a user installs.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

# coach with its test tools (pytest, selenium, and CPU builds of torch and triton for the kernels' tests).
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/coach run scenario-01 --no-interactive
	$(BIN)/coach diagnose tests/data/ncu_strided_copy/copy_strided_vs_coalesced.ncu-rep --top 2
	$(BIN)/coach load tests/data/nsys_torch_softmax/torch_softmax_nvtx.sqlite
	$(BIN)/coach ladder softmax

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build dist *.egg-info
