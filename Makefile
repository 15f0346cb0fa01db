# A CUDA programming assignment with its autograder.
#
#   make demo     grade the sample class (data/sample-submissions) against the
#                 reference solution on this machine's GPU; results in results/demo
#   make grade SUBMISSIONS=dir   grade a directory of submissions into results/
#   make bench    run the solution through the harness: checked, timed, rated
#                 against the device's measured limits
#   make check    the project's own tests; without a GPU it runs everything that
#                 needs none and lists the GPU tests it skipped
#   make data     regenerate the reference cases in data/
#   make deps     install the build's header libraries, bubblewrap (the grader's
#                 sandbox) and the tests' Python packages (done by demo and check
#                 on first use; idempotent)
#
# Students work in starter/ (make test, make bench); see README.md.

NPROC        := $(shell nproc 2>/dev/null || echo 2)
PYTEST_ARGS  ?=
DEPS_INCLUDE ?=
export DEPS_INCLUDE
STARTER      := $(MAKE) -C starter -j$(NPROC)
SOLUTION     := $(STARTER) KERNELS=../solution/kernels
PY_REQS      := solution/tests/requirements.txt grader/requirements.txt

# The tests' Python: python3 itself when it already has what they need (as on
# the GPU machines, which reach no package index), else a virtual environment.
ifeq ($(shell python3 -c "import numpy, pytest, jsonschema, pandas, jinja2, tqdm, matplotlib" 2>/dev/null && echo yes),yes)
PYTHON       := python3
PYTHON_READY :=
else
PYTHON       := .venv/bin/python
PYTHON_READY := .venv/.installed
endif

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The grader sandboxes student code in bubblewrap: Debian's package, or a bwrap
# binary unpacked into .deps/ (dpkg -x) on machines without a package index.
BWRAP ?= $(if $(wildcard .deps/root/usr/bin/bwrap),$(abspath .deps/root/usr/bin/bwrap))
ifneq ($(strip $(BWRAP)),)
export BWRAP
endif
HEADER_PACKAGES := $(shell $(MAKE) -s --no-print-directory -C starter header-packages)

RESULTS ?= results

.PHONY: demo check data deps deps-headers deps-sandbox build grade bench gradescope
# Grades the sample class in data/sample-submissions against the solution.
demo: deps build
	$(PYTHON) -m grader grade data/sample-submissions --results $(RESULTS)/demo --regrade

# Grades a directory of submissions: make grade SUBMISSIONS=dir [RESULTS=results]
grade: deps build
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=dir [RESULTS=results]" >&2; exit 2; }
	$(PYTHON) -m grader grade $(SUBMISSIONS) --results $(RESULTS)

# The solution through the harness: checked, timed, rated against the device's limits.
bench: deps-headers
	$(SOLUTION) harness
	@mkdir -p $(RESULTS)
	cd starter && ./build/solution/harness --json ../$(RESULTS)/bench.jsonl

# Gradescope's autograder zip: setup.sh and run_autograder with this repository.
gradescope:
	@mkdir -p dist
	rm -f dist/gradescope-autograder.zip
	git archive --format=zip --prefix=source/ -o dist/gradescope-autograder.zip HEAD
	cd grader/gradescope && zip -q ../../dist/gradescope-autograder.zip setup.sh run_autograder
	@echo "wrote dist/gradescope-autograder.zip: upload it as the assignment's autograder"

check: deps build
	$(STARTER) unit
	$(PYTHON) -m pytest -ra $(PYTEST_ARGS)

build: deps-headers
	$(STARTER) all unit-bin
	$(SOLUTION) all

data: deps build
	$(PYTHON) data/generate.py --harness starter/build/starter/harness

deps: deps-headers deps-sandbox $(PYTHON_READY)

# bubblewrap, which every build and run of student code goes through (grader/sandbox.py).
deps-sandbox:
	@if [ -n "$(BWRAP)" ]; then test -x "$(BWRAP)" || { echo "BWRAP=$(BWRAP) is not an executable" >&2; exit 1; }; \
	elif ! command -v bwrap >/dev/null; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "Missing bubblewrap (bwrap): install it, or set BWRAP=path/to/bwrap." >&2; exit 1; fi; \
	  echo "Installing bubblewrap"; \
	  $(SUDO) apt-get install -y -q bubblewrap || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q bubblewrap; }; \
	fi

# Debian's packages where the headers are missing; DEPS_INCLUDE=dir skips this.
deps-headers:
	@missing=""; for pair in $(HEADER_PACKAGES); do \
	  header=$${pair%%:*}; package=$${pair##*:}; \
	  echo "#include <$$header>" | $(CXX) -std=c++17 -x c++ -fsyntax-only $(if $(DEPS_INCLUDE),-isystem $(DEPS_INCLUDE)) - 2>/dev/null \
	    || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "Missing header libraries:$$missing. Install them, or set DEPS_INCLUDE=dir." >&2; exit 1; fi; \
	  echo "Installing$$missing"; \
	  $(SUDO) apt-get install -y -q $$missing || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q $$missing; }; \
	fi

.venv/.installed: $(PY_REQS)
	python3 -m venv --system-site-packages .venv
	.venv/bin/pip install -q $(addprefix -r ,$(PY_REQS))
	touch $@
