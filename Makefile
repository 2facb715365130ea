# flowlab: `make demo` runs the main job, `make test` runs the tests. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench lab clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,e2e,distributed]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m flowlab.demo

test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PY) -m pytest
	$(VENV)/bin/ruff check flowlab tests benchmarks

lint: $(STAMP)
	$(VENV)/bin/ruff check flowlab tests benchmarks

bench: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/runtime_overhead.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/startup.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/compile_time.py
	$(PY) benchmarks/mlp_vs_torch.py  # 1 and 2 threads side by side (needs the bench extra: torch, threadpoolctl)
	$(PY) benchmarks/lenet_vs_torch.py  # 1 thread (needs the bench extra: torch, threadpoolctl)
	$(PY) benchmarks/plan_svg.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/ray_machines.py  # two Ray nodes on this box (the distributed extra)

lab: $(STAMP)
	$(PY) -m pip install -q jupyterlab anywidget ipywidgets
	$(VENV)/bin/jupyter lab notebooks/

clean:
	rm -rf $(VENV) build log .pytest_cache
