# Both targets build the virtual environment from nothing when it is missing.
# torch is pinned in requirements.txt to the CPU build on this machine's disk.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VIGNETTE := $(VENV)/bin/vignette
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo demo-news demo-explain lint test venv clean bench-runner sysdeps lmms-venv

# The project itself is installed (editable, with every extra) so .venv/bin/vignette exists;
# requirements.txt pins what pyproject.toml leaves open (torch's CPU build above all).
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -e ".[dev]"
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(VIGNETTE) demo --out demo_out

# The news subset end to end: placeholder news sample -> tiny VLM answers -> tiny VLM judge -> results.
demo-news: venv
	$(VIGNETTE) news demo --out demo_out/news

# Attention of the answer over the pair image (tiny untrained LLaVA-NeXT), three panels for one question.
EXPLAIN := demo_out/explain
demo-explain: venv
	test -f $(EXPLAIN)/source/renders/index.parquet || $(VIGNETTE) build sample --out $(EXPLAIN)/source
	$(VIGNETTE) run --source $(EXPLAIN)/source --config identity_contrast --sample 3 --out $(EXPLAIN)/run \
	    --model "tiny:llava_next?mode=score&record_attention=true"
	$(VIGNETTE) explain $(EXPLAIN)/run --question "$$($(PY) -c "import pandas as p; r = p.read_parquet('$(EXPLAIN)/run/responses.parquet'); print(r[r.attn_left_share.notna()].question_id.iloc[0])")"

# The runner's own cost with the random responder (benchmarks/runner.md).
bench-runner: venv
	$(PY) benchmarks/runner_bench.py

# Lint and type-check the project's code, then the tests (all offline).
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Software nobody here wrote that the tests drive: Debian's chromium + chromedriver (browser tests) and
# nginx (a real static file server). Installed with apt when missing and we are root; else those tests skip.
SYSDEPS := chromium chromium-driver nginx-light
sysdeps:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null && command -v nginx >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSDEPS) >/dev/null) \
	    || echo "warning: apt-get could not install $(SYSDEPS): the browser and nginx tests will skip"; \
	else echo "warning: $(SYSDEPS) not installed and not root: the browser and nginx tests will skip"; fi

# lmms-eval in a venv of its own (docs/lmms_eval.md): it pins transformers and datasets apart from ours.
# The registry's torchvision does not load with this machine's torch CPU build ("operator torchvision::nms
# does not exist") and transformers imports it whenever it is installed, so it is removed; the VIGNETTE tasks
# and lmms-eval's openai backend need none of it. filelock < 4: lmms-eval 0.7.3 patches filelock._api, which
# filelock 4 no longer has. The project goes in editable for the tasks' utils.py.
# Fail-soft like sysdeps: when the install fails, tests/eval/importing/test_lmms_eval.py skips.
LMMS_VENV := .venv-lmms
$(LMMS_VENV)/.installed:
	rm -rf $(LMMS_VENV)
	$(PYTHON) -m venv $(LMMS_VENV)
	$(LMMS_VENV)/bin/python -m pip install --quiet torch==2.13.0 lmms-eval==0.7.3 "filelock<4" -e .
	$(LMMS_VENV)/bin/python -m pip uninstall --quiet -y torchvision
	touch $@

lmms-venv:
	@$(MAKE) --no-print-directory $(LMMS_VENV)/.installed \
	  || (rm -rf $(LMMS_VENV); echo "warning: could not install lmms-eval into $(LMMS_VENV): the lmms-eval test will skip")

test: lint sysdeps lmms-venv
	$(PY) -m pytest -q -n 2 tests

clean:
	rm -rf $(VENV) $(LMMS_VENV) demo_out
