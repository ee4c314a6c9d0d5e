# scalebook: every target bootstraps .venv itself, so a fresh clone needs only `make book` or `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
NOTEBOOKS := chapters/*.ipynb solutions/*.ipynb exercises/*.ipynb
# Laptop and CI runs emulate 8 devices on the CPU (chapters also request this in sb.setup()).
export JAX_NUM_CPU_DEVICES := 8
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# `make test` runs its files in this many pytest-xdist processes (each file whole in one, so a module's shared
# fixture is built once): three keep both of a 2-core machine's cores busy while a notebook kernel, a sandbox or a
# child process waits, and hold their share of the cores when other work runs beside the tests.
WORKERS ?= 3

.PHONY: venv node book lab test test-fast test-site lint sync check-sync exercises clean

venv: $(STAMP)

# Reinstall only when pyproject.toml changes (the stamp is older than it).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[book,dev]"
	$(BIN)/python -m scalebook.book.notebooks hooks
	touch $(STAMP)

## book: execute every chapter (cached) and build the website into _build/html; _ext/live_explorers.py fetches
## Pyodide and MathJax from the npm registry (pinned, checked, cached in .cache/) and builds the scalebook wheel;
## _ext/server_maths.py typesets the maths with that MathJax in Node.js, so a page reads with JavaScript off
book: venv node
	$(BIN)/jupyter-book build . -W --builder html
	@echo "open _build/html/index.html"

## notebook-filter: git reads the .ipynb twins through `python -m scalebook.book.notebooks strip` (.gitattributes names
## the filter), and every Jupyter server of .venv runs scalebook.book.notebooks.after_save after a save
## (.venv/etc/jupyter/jupyter_server_config.json), so a chapter run and saved in JupyterLab, however it was started,
## keeps its outputs on disk and `git status` stays clean. Making the venv sets both; this target sets them again.
.PHONY: notebook-filter
notebook-filter:
	$(BIN)/python -m scalebook.book.notebooks hooks

## pdf: print the website as a book, _build/pdf/scalebook-a4.pdf and scalebook-letter.pdf: every page of _toc.yml
## through headless Chromium in the site's print style (_ext/static/scalebook-print.css: no code cell source, no
## check marks), merged by pypdf behind a table of contents, with bookmarks. One paper only: PAPERS=a4 (or letter).
PAPERS ?= a4 letter
.PHONY: pdf chromium
pdf: book chromium
	for paper in $(PAPERS); do $(BIN)/python _ext/pdf_book.py --site _build/html --paper $$paper || exit 1; done

## node: install Debian's nodejs if it is missing (the build typesets the site's maths with it); without it
## the maths is left to MathJax in the reader's browser
node:
	command -v node >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs \
		|| (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs) \
		|| echo "nodejs could not be installed here: the site's maths needs JavaScript in the browser"

## chromium: install Debian's chromium if it is missing (the site's tests and the PDF need it)
chromium:
	command -v chromium >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium \
		|| (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) \
		|| (echo "chromium could not be installed here: the site cannot be checked or printed" && false)

## lab: open JupyterLab on the chapters (as a user, or as root in a container: then it adds --allow-root).
## It serves the repository root, so that jupytext.toml applies, and opens the file browser at chapters/.
## A chapter run and saved leaves `git status` clean (notebook-filter), as it does in a plain `.venv/bin/jupyter lab`.
lab: venv notebook-filter
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/chapters \
		$(if $(filter 0,$(shell id -u)),--allow-root)

## test: lint, pairing check, package tests, then every chapter, solution and exercise notebook under nbval
test: venv lint check-sync
	command -v bwrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap \
		|| (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap) \
		|| echo "bubblewrap could not be installed here: the grader's sandbox tests will report themselves skipped"
	$(BIN)/python -m pytest -q -n $(WORKERS) --dist loadfile -p no:cacheprovider tests --ignore=tests/site \
		--nbval-lax --nbval-current-env $(NOTEBOOKS)

## test-fast: the edit loop, in about a minute: the package tests not marked `slow` (no nbval, no sandboxed
## grading, no multi-process runs, no notebook kernels); `make test` stays the full gate
test-fast: venv
	$(BIN)/python -m pytest -q -m "not slow" -p no:cacheprovider tests --ignore=tests/site

## test-site: build the site, then open every page in headless Chromium (installed from Debian if missing):
## fails on an exception, console error or failed load, a missing image, a broken link or anchor
test-site: book chromium
	$(BIN)/python -m pytest -q tests/site

lint: venv
	$(BIN)/ruff check scalebook tests benchmarks

## sync: regenerate install cells, exercises, README chapter table and the .ipynb twins from the .md sources,
## and errata.md from the errata and the upstream ledger
sync: venv
	$(BIN)/python -m scalebook.book.notebooks sync
	$(BIN)/python -m scalebook.book.errata sync

## check-sync: fail when a twin, an exercise or the README table is stale, or a twin has outputs; when the
## upstream ledger has fallen behind its pin (a commit between pin and head unclassified); when errata.md is stale
check-sync: venv
	$(BIN)/python -m scalebook.book.notebooks check
	$(BIN)/python -m scalebook.book.upstream check
	$(BIN)/python -m scalebook.book.errata check

## exercises: derive exercises/ from solutions/ (part of sync)
exercises: sync

clean:
	rm -rf _build .jupyter_cache .pytest_cache
