# Both targets build the virtual environment from nothing when it is missing.
# torch is pinned in requirements.txt to the CPU build on this machine's disk.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test venv clean bench-runner

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) -m eval.demo --out demo_out

# The runner's own cost with the random responder (benchmarks/runner.md).
bench-runner: venv
	$(PY) benchmarks/runner_bench.py

test: venv
	$(PY) -m pytest -q -n 2 tests

clean:
	rm -rf $(VENV) demo_out
