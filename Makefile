# kafkacore's commands on a fresh machine:
#   make demo   the main job: the flights pipeline (PySpark) into a 3-broker kafkacore cluster
#   make test   the whole tox matrix (Python 3.10, 3.12, 3.13; spark, docs and lint on 3.11), two lanes at a time
#   make compat the client compatibility table (docs/compatibility.rst), made by running the clients
# Each creates what it needs (.venv-tools, .venv); nothing is installed by hand.

SHELL := /bin/bash
TOOLS := .venv-tools
PY    := $(TOOLS)/bin/python
# The interpreter for our own virtualenvs: the machine's python3, found before PATH changes.
PYTHON := $(shell command -v python3)
# tox finds its interpreters on PATH (python3.10 ... python3.13): put the bin folders of the
# newest 3.10-3.13 that pyenv has in front, so a fresh clone needs no manual step.
PYENV_BINS := $(shell root=$$(pyenv root 2>/dev/null) && pyenv versions --bare 2>/dev/null | grep -E '^3\.1[0-3]\.[0-9]+$$' | sort -t. -k2,2n -k3,3n | tac | awk -F. '!seen[$$1"."$$2]++' | sed "s|^|$$root/versions/|; s|$$|/bin|" | paste -sd: -)
export PATH := $(if $(PYENV_BINS),$(PYENV_BINS):)$(PATH)
# tox-uv's uv takes those interpreters, never a Python download of its own (from GitHub, which
# these machines do not reach: uv would fail there instead of using pyenv's).
export UV_PYTHON_DOWNLOADS := never

.PHONY: test demo perf-demo dev docs lint bench compat clean wheel

TOX_ENVS := py312,spark,py310,py313,docs,lint

$(TOOLS)/.ok: pyproject.toml
	$(PYTHON) -m venv $(TOOLS)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "tox>=4.14" "tox-uv>=1.11"
	touch $@

test: $(TOOLS)/.ok
	@# kcat (Debian) is one of the clients that judge our broker; its tests skip where it cannot be installed.
	@command -v kcat >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		(apt-get update -qq && apt-get install -y -qq kcat) >/dev/null 2>&1; } || echo "kcat not installed: its tests will be skipped"
	@# kafkajs (Node) too, from npm, into a cache folder (tests/compat/npm_cache.py; the tests install it too, at first use).
	@$(PYTHON) tests/compat/npm_cache.py
	@# Two environments at a time (each runs its tests on two pytest-xdist workers), the longest
	@# first, py312's full tier and spark, so that the last to finish is short (tox.ini,
	@# TESTING.md).  A failed environment's output is printed.
	$(TOOLS)/bin/tox run-parallel --parallel 2 --parallel-no-spinner -e $(TOX_ENVS)

# A development environment: the package in editable mode with test and bench extras.
.venv/.ok: pyproject.toml setup.py
	$(PYTHON) -m venv .venv
	.venv/bin/python -m pip install -q --upgrade pip
	@echo "installing kafkacore and compiling its Cython modules: a few minutes, pip is quiet meanwhile (pip install -v shows each module)"
	.venv/bin/python -m pip install -q -e '.[test,bench,spark]' --config-settings editable_mode=compat sphinx ruff cython-lint mypy
	touch $@

dev: .venv/.ok

# A wheel of kafkacore for this machine's python3, in dist/: compiled once (on every core), then
# `pip install dist/kafkacore-*.whl` (with any extras, '...whl[broker,test]') takes seconds.
wheel: $(TOOLS)/.ok
	@echo "compiling kafkacore's Cython modules into a wheel: a few minutes (pip wheel -v shows each module)"
	$(PY) -m pip wheel --no-deps -w dist .

# The main job: the flights pipeline on PySpark (local mode), into a 3-broker kafkacore cluster
# it starts itself, the leader of one partition killed halfway (--broker tansu: one tansu broker).
demo: .venv/.ok
	PYSPARK_PYTHON=$(CURDIR)/.venv/bin/python PYSPARK_DRIVER_PYTHON=$(CURDIR)/.venv/bin/python \
		.venv/bin/python examples/pipeline.py

# The client compatibility table (docs/compatibility.rst): confluent-kafka, kafka-python,
# aiokafka, kcat and kafkajs (npm installs it at first use) run every call they have against our
# broker, tansu and a 3-broker cluster; writes tests/compat/results.json and
# docs/compatibility_table.inc (tests/broker/test_compat_clients.py checks both stay true).
compat: .venv/.ok
	.venv/bin/python tests/compat/generate.py

# The producer alone: kafkacore-perf into a local broker, read back and checked.
perf-demo: .venv/.ok
	.venv/bin/python examples/demo.py

docs: $(TOOLS)/.ok
	$(TOOLS)/bin/tox run -e docs

lint: $(TOOLS)/.ok
	$(TOOLS)/bin/tox run -e lint

bench: .venv/.ok
	.venv/bin/python benchmarks/bench_core.py
	.venv/bin/python benchmarks/bench_producer.py
	.venv/bin/python benchmarks/bench_broker.py
	.venv/bin/python benchmarks/bench_purgatory.py
	PYSPARK_PYTHON=$(CURDIR)/.venv/bin/python .venv/bin/python benchmarks/bench_spark.py

clean:
	rm -rf build .tox $(TOOLS) .venv kafkacore/core/*.so kafkacore/core/*.html docs/_build
	rm -f kafkacore/broker/*.so kafkacore/broker/*.html kafkacore/broker/log/*.so kafkacore/broker/log/*.html
	for f in kafkacore/core/*.pyx kafkacore/broker/*.pyx kafkacore/broker/log/*.pyx; do rm -f "$${f%.pyx}.c"; done
