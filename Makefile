# Both targets build the virtual environment from nothing when it is missing.
# torch is pinned in requirements.txt to the CPU build on this machine's disk.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo demo-news demo-explain test venv clean bench-runner

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) -m eval.demo --out demo_out

# The news subset end to end: placeholder news sample -> tiny VLM answers -> tiny VLM judge -> results.
demo-news: venv
	$(PY) -m eval.news.demo --out demo_out/news

# Attention of the answer over the pair image (tiny untrained LLaVA-NeXT), three panels for one question.
EXPLAIN := demo_out/explain
demo-explain: venv
	test -f $(EXPLAIN)/source/renders/index.parquet || $(PY) -m dataset_builder sample --out $(EXPLAIN)/source
	$(PY) -m eval.run --source $(EXPLAIN)/source --config identity_contrast --sample 3 --out $(EXPLAIN)/run \
	    --model "tiny:llava_next?mode=score&record_attention=true"
	$(PY) -m eval.explain $(EXPLAIN)/run --question "$$($(PY) -c "import pandas as p; r = p.read_parquet('$(EXPLAIN)/run/responses.parquet'); print(r[r.attn_left_share.notna()].question_id.iloc[0])")"

# The runner's own cost with the random responder (benchmarks/runner.md).
bench-runner: venv
	$(PY) benchmarks/runner_bench.py

test: venv
	$(PY) -m pytest -q -n 2 tests

clean:
	rm -rf $(VENV) demo_out
