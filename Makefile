# lectorch: two commands on a fresh machine with only python3 — `make book` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# One lock per accelerator: ACCEL=cpu|cuda (default: cuda where nvidia-smi lists a GPU).
ACCEL  ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu)
LOCK_cpu  := requirements.txt
LOCK_cuda := requirements-cuda.txt
LOCK   := $(LOCK_$(ACCEL))
# SYSTEM_TORCH=1: a GPU box whose Python already has a CUDA torch; the venv sees the system site
# packages and gets everything of the lock but torch and its CUDA stack.
TORCH_STACK := ^(torch|triton|nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+)==
STAMP  := $(VENV)/.lectorch-installed-$(ACCEL)$(if $(SYSTEM_TORCH),-system-torch)
OUTER_SITE := import site, sys; sys.prefix != sys.base_prefix and print(*site.getsitepackages(), sep="\n")
GPU_WHEELS ?= wheels/gpu-cp312
# The Pythons the locks cover (tools/lock.py SUPPORTED, FIRST_PATCH): checked before anything is installed.
PY_CHECK := import sys; sys.exit(not ((3, 11, 5) <= sys.version_info[:3] < (3, 14) and sys.version_info[:3] != (3, 13, 0)))
PY_HELP  := the course needs CPython 3.11 (3.11.5 or newer), 3.12 or 3.13 (3.13.1 or newer) (3.10 is not supported: \
  jupyter-book's theme needs 3.11.5; on 3.13.0 torch.compile warns of a CPython bug that 3.13.1 fixed). \
  Install one, then e.g. PYTHON=python3.12 make book
# torch's CPU build: this index, else a local copy, else PyPI's build (tools/lock.py install-cpu says which)
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# pip keeps its cache (CONTRIBUTING.md, "The Makefile")
PIP := -m pip install --quiet --disable-pip-version-check
# What `make test` and `make unit` lint (pyproject.toml's [tool.ruff] rules)
LINT := lectorch tests tools grading benchmarks
LAB_PORT  ?= 8888
LAB_STAMP := $(VENV)/.lectorch-lab
CHAPTERS := $(sort $(wildcard chapters/[0-9][0-9]_*.ipynb))
NB     ?= $(CHAPTERS)

.PHONY: help install lock gpu-wheels gpu-check gpu-rehearsal book serve test rehearse unit execute lab student grading-bundle grade clean translations torch-matrix
help:
	@echo "make book     build the HTML book into _build/html (creates $(VENV) on first use)"
	@echo "make book EDITION=class  the class book (no solutions) into _build/class/html"
	@echo "make serve    serve the built book on http://127.0.0.1:$(SERVE_PORT)/, gzip-compressed as a host serves it"
	@echo "make test     the tests: lectorch, the chapters (nbval), the book build, the browser, the grader"
	@echo "make rehearse a user's whole paths for real: a fresh venv, the GPU check's dry run, JupyterLab, DDP"
	@echo "make unit     the fast loop: ruff and lectorch's unit tests (no book, browser or notebook runs)"
	@echo "make execute  re-execute chapters in place (NB=chapters/05_flops_mfu.ipynb for one)"
	@echo "make lab      JupyterLab on the chapters (e.g. on a GPU box, through an SSH tunnel)"
	@echo "make student  write the student edition (solutions replaced by stubs) into student/ (中文: student/zh; LANGUAGE=zh_CN for one)"
	@echo "make grading-bundle  the instructor's hidden cases and answers (GRADING_SEED=secret) into $(GRADING_BUNDLE)"
	@echo "make grade SUBMISSIONS=dir [JOBS=n]  grade completed notebooks, each in a sandbox (table + grades.json, grades.jsonl)"
	@echo "make translations  re-extract the English messages into the zh_CN catalogs (locales/)"
	@echo "make install  create $(VENV) from the lock of ACCEL=cpu|cuda (now: $(ACCEL)); SYSTEM_TORCH=1 keeps the machine's torch"
	@echo "make lock     re-resolve requirements.in into requirements.txt (CPU) and requirements-cuda.txt (CUDA)"
	@echo "make gpu-wheels  download the wheels make gpu-check installs on an offline GPU box ($(GPU_WHEELS)/)"
	@echo "make gpu-check   the whole GPU validation (DRY_RUN=1: the same steps on a CPU); results in OUT=dir"
	@echo "make gpu-rehearsal  the GPU box's run on a replica of the box (Python 3.12, torch 2.11), on this CPU"
	@echo "make torch-matrix  the unit tests and every chapter on each torch release of the past year (RELEASE=2.15 for one, NEWEST=1: PyPI's newest)"
	@echo "make clean    remove builds (keeps $(VENV))"

install: $(STAMP)

$(STAMP): $(LOCK) pyproject.toml
	@test -n "$(LOCK)" || { echo "ACCEL=$(ACCEL): use ACCEL=cpu or ACCEL=cuda"; exit 2; }
	@test -x $(BIN)/python || $(PYTHON) -c '$(PY_CHECK)' 2>/dev/null || { \
	  echo "$(PYTHON): $$($(PYTHON) --version 2>&1 | head -1)"; echo "$(PY_HELP)"; exit 2; }
ifdef SYSTEM_TORCH
	@# PYTHON may itself be a venv's (its torch in that venv): a venv made from it would see only the
	@# base Python's packages, so a .pth file adds that venv's site-packages, after .venv's own.
	@test -x $(BIN)/python || { $(PYTHON) -m venv --system-site-packages $(VENV) && \
	  $(PYTHON) -c '$(OUTER_SITE)' > "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/lectorch-system-torch.pth"; }
	grep -vE '$(TORCH_STACK)' $(LOCK) > $(VENV)/requirements-without-torch.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r $(VENV)/requirements-without-torch.txt
else
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
ifeq ($(ACCEL),cpu)
	$(BIN)/python tools/lock.py install-cpu --index $(TORCH_CPU_INDEX)
else
	$(BIN)/python $(PIP) -r $(LOCK)
endif
endif
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(BIN)/python tools/lock.py check-install $(ACCEL) $(if $(SYSTEM_TORCH),--system-torch)
	@rm -f $(VENV)/.lectorch-installed*
	@touch $@

# Re-resolve the locks (needs PyPI): uv in a scratch venv, requirements.in + the old locks as constraints.
lock:
	@test -x .venv-lock/bin/uv || { $(PYTHON) -m venv .venv-lock && .venv-lock/bin/python -m pip install --quiet uv==0.13.9; }
	PATH="$(CURDIR)/.venv-lock/bin:$$PATH" .venv-lock/bin/python tools/lock.py cpu cuda

# The wheels of tools/gpu/carried.txt (what the GPU box lacks), for cp312 manylinux x86-64.
gpu-wheels:
	$(PYTHON) tools/gpu/gpu_box.py wheels $(GPU_WHEELS)

# The GPU box's run on a replica of its python3, on this CPU (tools/gpu/README.md); not part of `make test`.
gpu-rehearsal:
	nice $(PYTHON) tools/gpu/gpu_rehearsal.py --wheels $(GPU_WHEELS) $(if $(OUT),--out $(OUT))

# The unit tests and every chapter on each torch release of tools/torch_matrix.py (CONTRIBUTING.md);
# writes benchmarks/torch-matrix.json, the running page's table. Not part of `make test`.
torch-matrix: $(STAMP)
	nice $(BIN)/python tools/torch_matrix.py $(addprefix --release ,$(RELEASE)) $(if $(NEWEST),--newest)

# On the GPU box, with its python3 (tools/gpu/README.md); DRY_RUN=1: the same steps here, with $(VENV)'s Python.
ifdef DRY_RUN
gpu-check: $(STAMP)
	$(BIN)/python tools/gpu/gpu_check.py --dry-run --wheels $(GPU_WHEELS) $(if $(OUT),--out $(OUT))
else
gpu-check:
	$(PYTHON) tools/gpu/gpu_check.py --wheels $(GPU_WHEELS) $(if $(OUT),--out $(OUT))
endif

# The self-study book, the class book and the English messages, side by side, each skipped while its
# stamp matches its inputs (tools/book/build_book.py; CONTRIBUTING.md, "The book and the other targets").
EDITION ?= all
BOOK_EDITIONS := $(if $(filter all,$(EDITION)),book class gettext,$(if $(filter class,$(EDITION)),class,book))
book: $(STAMP)
	@case "$(EDITION)" in all|self-study|class) ;; *) echo "EDITION=$(EDITION): use EDITION=self-study or EDITION=class (the default builds both)"; exit 2;; esac
	@test -z "$(EXECUTE)" -o "$(EDITION)" != class || { echo "EXECUTE=1 executes the self-study book's chapters; the class book (stubs, which stop a run) is always built from the stored outputs"; exit 2; }
	@pids=""; for edition in $(BOOK_EDITIONS); do \
	  $(BIN)/python tools/book/build_book.py --edition $$edition $(if $(EXECUTE),$$(test $$edition = book && echo --execute)) & \
	  pids="$$pids $$!"; done; status=0; for pid in $$pids; do wait $$pid || status=1; done; exit $$status
	@echo "Open $(CURDIR)/_build/html/index.html in a browser (中文: _build/html/zh/index.html; the class book: _build/class/html)."

# The built book on 127.0.0.1, gzip-compressed as hosts send it (SERVE_PORT=8001 for another port).
SERVE_PORT ?= 8000
serve: $(STAMP)
	@test -f _build/html/index.html || { echo "no book in _build/html: run make book first"; exit 2; }
	$(BIN)/python tools/book/serve.py _build/html --port $(SERVE_PORT)

# Re-extract the English messages and merge them into locales/zh_CN (changed ones turn fuzzy).
translations: $(STAMP)
	$(BIN)/python tools/book/i18n.py update
	$(BIN)/python tools/book/i18n.py status

# Everything but the rehearsals, on pytest-xdist workers (conftest.py says how many and in which
# order) that share the book `make book` built. TEST_WORKERS=N: N workers; 0: in one process.
TEST_WORKERS ?= auto
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
test: $(STAMP) $(LAB_STAMP)
	$(BIN)/ruff check $(LINT)
	$(BIN)/python -m pytest $(XDIST) -m "not rehearsal" --durations=25

# A user's whole paths run for real, minutes each (tests marked `rehearsal`); CI runs it after `make test`.
rehearse: $(STAMP) $(LAB_STAMP)
	$(BIN)/python -m pytest $(XDIST) -m rehearsal --durations=10

# The edit loop: lint, doctests and unit tests, one worker per core (UNIT_WORKERS=N: N workers, 0: in
# one process). No book, browser, notebook kernel or many-process run: tests marked `book`, `browser`,
# `slow` or `rehearsal` are left out (pyproject.toml's markers).
UNIT_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
UNIT_MARKERS := not book and not browser and not slow and not rehearsal
unit: $(STAMP)
	$(BIN)/ruff check $(LINT)
	$(BIN)/python -m pytest lectorch tests tools grading -m "$(UNIT_MARKERS)" -q \
	  $(if $(filter 0,$(UNIT_WORKERS)),,-n $(UNIT_WORKERS) --dist loadfile --no-loadscope-reorder)

execute: $(STAMP)
	@for nb in $(NB); do echo "executing $$nb"; $(BIN)/jupyter execute --inplace "$$nb" || exit 1; \
	  $(BIN)/python tools/strip_notebook_metadata.py "$$nb" || exit 1; done

# JupyterLab on 127.0.0.1 only, with a token (printed in its URL); as root (cloud GPU containers)
# with --allow-root, which JupyterLab otherwise refuses. LAB_PORT=8889 for another port.
lab: $(LAB_STAMP)
	$(BIN)/jupyter lab --notebook-dir=chapters --no-browser --ip=127.0.0.1 --port=$(LAB_PORT) \
	  --ServerApp.port_retries=0 $(if $(filter 0,$(shell id -u)),--allow-root)

$(LAB_STAMP): requirements-lab.txt $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-lab.txt
	@touch $@

# LANGUAGE=zh_CN (or en) for one language; by default English into student/, 中文 into student/zh
student: $(STAMP)
	$(BIN)/python -m grading student $(if $(LANGUAGE),--language $(LANGUAGE))

GRADING_BUNDLE ?= grading-bundle/bundle.pt
grading-bundle: $(STAMP)
	$(BIN)/python -m grading bundle "$(GRADING_BUNDLE)"

grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=folder-of-notebooks"; exit 2; }
	@test -f "$(GRADING_BUNDLE)" || { echo "no grading bundle at $(GRADING_BUNDLE): run make grading-bundle first"; exit 2; }
	$(BIN)/python -m grading grade "$(SUBMISSIONS)" --bundle "$(GRADING_BUNDLE)" --json grades.json $(if $(JOBS),--jobs $(JOBS))

clean:
	rm -rf _build student .pytest_cache
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
