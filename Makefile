# lectorch: two commands on a fresh machine with only python3 — `make book` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.lectorch-installed
CHAPTERS := $(sort $(wildcard chapters/[0-9][0-9]_*.ipynb))
NB     ?= $(CHAPTERS)

.PHONY: help book test execute lab student grade clean
help:
	@echo "make book     build the HTML book into _build/html (creates $(VENV) on first use)"
	@echo "make test     run every test: lectorch, the chapters (nbval), the book build, the browser"
	@echo "make execute  re-execute chapters in place (NB=chapters/05_flops_mfu.ipynb for one)"
	@echo "make lab      JupyterLab on the chapters (e.g. on a GPU box, through an SSH tunnel)"
	@echo "make student  write the student edition (solutions replaced by stubs) into student/"
	@echo "make grade SUBMISSIONS=dir  grade completed notebooks (table + grades.json)"
	@echo "make clean    remove builds (keeps $(VENV))"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --keep-going
	@echo "Open $(CURDIR)/_build/html/index.html in a browser."

test: $(STAMP)
	$(BIN)/python -m pytest

execute: $(STAMP)
	@for nb in $(NB); do echo "executing $$nb"; $(BIN)/jupyter execute --inplace "$$nb" || exit 1; done

lab: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-lab.txt
	$(BIN)/jupyter lab chapters --no-browser --ip=127.0.0.1 --port=8888

student: $(STAMP)
	$(BIN)/python tools/student_edition.py student

grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=folder-of-notebooks"; exit 2; }
	$(BIN)/python tools/grade.py "$(SUBMISSIONS)" --json grades.json

clean:
	rm -rf _build student .pytest_cache
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
