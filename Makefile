# flowlab: `make demo` runs the main job, `make test` runs the tests. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LAB_STAMP := $(VENV)/.lab-installed
# make lab HOST=0.0.0.0 PORT=9999 LAB_ARGS=--no-browser: where JupyterLab listens, plus any other flags;
# as root (containers) it adds --allow-root, without which JupyterLab refuses to start
HOST ?= 127.0.0.1
PORT ?= 8888
LAB_ARGS ?=
USER_ID ?= $(shell id -u)
LAB_FLAGS := --ServerApp.ip=$(HOST) --ServerApp.port=$(PORT) $(if $(filter 0,$(USER_ID)),--allow-root) $(LAB_ARGS)

.PHONY: demo test lint bench lab clean ext gpu-check

# distributed: the Ray tests run; cuda: numba-cuda with the toolkit wheels, so every CUDA kernel is also compiled to
# PTX (the simulator accepts code the GPU compiler rejects)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,e2e,distributed,cuda]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m flowlab.demo

test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PY) -m pytest
	$(VENV)/bin/ruff check flowlab tests benchmarks examples tools
	$(VENV)/bin/mypy
	$(PY) tools/sz.py

lint: $(STAMP)
	$(VENV)/bin/ruff check flowlab tests benchmarks examples tools
	$(VENV)/bin/mypy

bench: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/runtime_overhead.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/startup.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/compile_time.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/parallel_runtime.py  # a thread per Plan thread vs one; 2 devices vs 1
	$(PY) benchmarks/mlp_vs_torch.py  # 1 and 2 threads side by side (needs the bench extra: torch, threadpoolctl)
	$(PY) benchmarks/lenet_vs_torch.py  # 1 thread (needs the bench extra: torch, threadpoolctl)
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/models.py --quick  # AlexNet, ResNet-50, BERT (tiny) vs torch; ResNet-50 on 1 and 2 devices
	$(PY) benchmarks/plan_svg.py
	OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/ray_machines.py  # two Ray nodes on this box (the distributed extra)

# Every GPU check of issue 12 on a machine with an NVIDIA GPU: tests/cuda without the simulator, compute-sanitizer
# over the kernel tests, the GEMM and MLP benchmarks against torch; one report in $(GPU_OUT)/report.md. It uses the
# venv where there is one, else python3 as it is (a GPU image with numba-cuda and torch, and no network to build a
# venv); GPU_CHECK_ARGS=--sim runs it in the simulator, --quick the benchmarks' quick mode, --steps a few steps.
GPU_PY ?= $(if $(wildcard $(PY)),$(PY),python3)
GPU_OUT ?= build/gpu-check
GPU_CHECK_ARGS ?=
gpu-check:
	PYTHONPATH=$(CURDIR) OPENBLAS_NUM_THREADS=1 $(GPU_PY) benchmarks/gpu_check.py --out $(GPU_OUT) $(GPU_CHECK_ARGS)

$(LAB_STAMP): $(STAMP)
	$(PY) -m pip install -q jupyterlab anywidget ipywidgets
	touch $(LAB_STAMP)

lab: $(LAB_STAMP)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks $(LAB_FLAGS)

# The TypeScript front end (extension/): the anywidget module, the JupyterLab mime renderer, the e2e fixtures and the
# build stamp; needs Node 20 and npm, and the venv for jupyter-builder. The outputs are committed.
ext: $(STAMP)
	cd extension && npm install --no-audit --no-fund && PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npm run build && npm test

clean:
	rm -rf $(VENV) build log .pytest_cache
