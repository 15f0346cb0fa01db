# A CUDA programming assignment with its autograder.
#
#   make demo     grade the sample class (data/sample-submissions) against the
#                 reference solution and publish its pages in results/demo: on this
#                 machine's GPU; without one, correctness only on the CPU backend
#   make grade SUBMISSIONS=dir [DEVICE=auto|gpu|cpu]   grade a directory of
#                 submissions into results/ (auto: the GPU if there is one, else the CPU)
#   make bench    run the solution through the harness: checked, timed, rated
#                 against the device's measured limits; then its sweep of sizes
#                 beside cuBLAS, copy, the CPU and transfers: results/bench/
#   make bench-reference   record that run, stamped with the solution it measured, as
#                 starter/bench/reference.json: the numbers students' `make bench`
#                 plots and the handout quotes (run both on the grading GPU, commit it)
#   make leaderboard   publish results/leaderboard/ (one self-contained page,
#                 Markdown, CSV) from results/grades.sqlite
#   make overview   rewrite results/overview.html (for the staff: how the class did) from
#                 results/grades.sqlite; `grade` writes it too
#   make similarity   compare every pair of submissions per task (Debian's similarity-tester):
#                 results/similarity.html and .csv, for the staff [SUBMISSIONS=dir]
#   make check    the project's own tests; without a GPU it runs everything that
#                 needs none and lists the GPU tests it skipped
#   make check-fast   the fast tier of them (no build, sandbox, Slurm, browser or GPU;
#                 conftest.py decides which): run it first, on every change
#   make check-cpu-runtime  the CPU runtime's own doctest suite alone (starter/cpu/tests; make check runs it too)
#   make data     regenerate the reference cases in data/
#   make profile-reference  rewrite starter/bench/profile-reference.json, the solution's
#                 performance counters (make profile's solution column; the CPU, no GPU)
#   make registry rewrite starter/harness/registry.json (the task registry the grader,
#                 the handout and make dist read) from the harness, after editing
#                 starter/harness/tasks/
#   make handout  render handout/build/assignment.html from the rubric, the registry
#                 and starter/bench/reference.json (refused unless it measured today's
#                 solution: make bench && make bench-reference on the grading GPU)
#   make dist     the student tarball, dist/<assignment>-starter.tar.gz:
#                 starter, handout, public data, header libraries; leak-checked
#   make deps     install the build's header libraries, Boost.Context (the CPU
#                 backend's fibers), bubblewrap (the grader's sandbox) and the tests'
#                 Python packages (done by demo and check on first use; idempotent)
#
# Every other command of the grader is `bin/grader COMMAND` (bin/grader --help).
# Students work in starter/ (make test, make bench); see README.md.

NPROC        := $(shell nproc 2>/dev/null || echo 2)
PYTEST_ARGS  ?=
DEPS_INCLUDE ?=
export DEPS_INCLUDE
# CPU=0: the project's own builds are the GPU's (nvcc), also on a machine without a GPU (CI).
STARTER      := $(MAKE) -C starter -j$(NPROC) CPU=0
SOLUTION     := $(STARTER) KERNELS=../solution/kernels BENCH_EXTRA=../solution/bench
PY_REQS      := solution/tests/requirements.txt grader/requirements.txt

# The tests' Python: python3 itself when it already has what they need (as on
# the GPU machines, which reach no package index), else a virtual environment.
ifeq ($(shell python3 -c "import numpy, pytest, jsonschema, pandas, jinja2, tqdm, matplotlib, yaml, starlette, uvicorn, jwt, lti1p3platform" 2>/dev/null && echo yes),yes)
PYTHON       := python3
PYTHON_READY :=
else
PYTHON       := .venv/bin/python
PYTHON_READY := .venv/.installed
endif

# Pretty-printed, so a change to the registry reads as a small diff.
PYTHON_FOR_JSON := python3 -c "import json, sys; print(json.dumps(json.load(sys.stdin), indent=1))"

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The grader sandboxes student code in bubblewrap: Debian's package, or a bwrap
# binary unpacked into .deps/ (dpkg -x) on machines without a package index.
BWRAP ?= $(if $(wildcard .deps/root/usr/bin/bwrap),$(abspath .deps/root/usr/bin/bwrap))
ifneq ($(strip $(BWRAP)),)
export BWRAP
endif
HEADER_PACKAGES := $(shell $(MAKE) -s --no-print-directory -C starter header-packages)
# The CPU backend switches its fibers with Boost.Context (starter/cpu/cpu.mk; without it, slower, with ucontext).
CPU_PACKAGES    := boost/context/detail/fcontext.hpp:libboost-context-dev

RESULTS ?= results
# Where make demo and make grade run student code: auto (this machine's GPU when it has one, else the CPU
# backend, correctness only: grader/backends/cpu.py decides), gpu or cpu.
DEVICE  ?= auto
# The grader's command line, as the README runs it.
GRADER  := bin/grader
# The solution's measured record (default starter/bench/reference.json; tests write theirs elsewhere).
RECORD  ?=
RECORD_ARG := $(if $(RECORD),--record $(RECORD))

.PHONY: demo check check-fast check-cpu-runtime data registry deps deps-headers deps-pandoc deps-browser deps-sandbox deps-slurm deps-portable build grade \
        bench bench-reference profile-reference bench-sources gradescope handout dist harness leaderboard overview similarity deps-similarity
# Grades the sample class in data/sample-submissions against the solution and publishes its pages; a banner at
# the end says how it was graded (timed, or correctness only on the CPU) and where the pages are. The grader
# builds what it needs in its own work folder, so no `make build` (the project's nvcc build) comes first.
demo: deps
	$(GRADER) grade data/sample-submissions --results $(RESULTS)/demo --regrade --device $(DEVICE)
	$(GRADER) leaderboard --results $(RESULTS)/demo
	@$(PYTHON) -m grader.reports.demo $(RESULTS)/demo

# Grades a directory of submissions: make grade SUBMISSIONS=dir [DEVICE=auto|gpu|cpu] [RESULTS=results]
grade: deps
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=dir [DEVICE=auto|gpu|cpu] [RESULTS=results]" >&2; exit 2; }
	$(GRADER) grade $(SUBMISSIONS) --results $(RESULTS) --device $(DEVICE)

# The published leaderboard from the store: make leaderboard [RESULTS=results] [LEADERBOARD_ARGS=--with-scores]
leaderboard: $(PYTHON_READY)
	$(GRADER) leaderboard --results $(RESULTS) $(LEADERBOARD_ARGS)

# The staff's page of how the class did, from the store: make overview [RESULTS=results]
overview: $(PYTHON_READY)
	$(GRADER) overview --results $(RESULTS)

# Every pair of submissions compared per task: make similarity [RESULTS=results] [SUBMISSIONS=dir]
similarity: deps-similarity $(PYTHON_READY)
	$(GRADER) similarity --results $(RESULTS) $(if $(SUBMISSIONS),--submissions $(SUBMISSIONS))

# The solution through the harness: checked, timed, rated against the device's
# limits (results/bench.jsonl); then starter's `make bench` on the solution:
# results/bench/ (bench.json, bench.md, *.png). What it measures is written
# first, beside them: results/bench/sources.json (the kernels' sha256, the
# harness version), which make bench-reference stamps the record with.
BENCH_PYTHON := $(if $(PYTHON_READY),$(CURDIR)/$(PYTHON),$(PYTHON))
bench: deps
	@rm -f $(RESULTS)/bench/bench.json $(RESULTS)/bench/sources.json
	$(SOLUTION) harness bench-bin
	@mkdir -p $(RESULTS)/bench
	@$(MAKE) --no-print-directory bench-sources
	cd starter && ./build/solution/harness --json $(abspath $(RESULTS))/bench.jsonl
	$(SOLUTION) bench BENCH_LABEL=solution BENCH_OUT=$(abspath $(RESULTS))/bench BENCH_REFERENCE= \
	  PYTHON3=$(BENCH_PYTHON)

# make bench's first step, after the build: which solution and harness it measures.
bench-sources: $(PYTHON_READY)
	$(PYTHON) -m handout.record sources --harness starter/build/solution/harness --out $(RESULTS)/bench/sources.json

# The solution's measured record, the one source of its numbers: students' `make
# bench` plots it, the handout quotes it, make dist ships it. Run after `make
# bench` on the grading GPU, then commit starter/bench/reference.json.
bench-reference: $(PYTHON_READY)
	$(PYTHON) -m handout.record save $(RESULTS)/bench $(RECORD_ARG)

# Gradescope's autograder zip: setup.sh, run_autograder and the committed tree at its root (Gradescope unpacks
# it into /autograder/source). Gradescope's containers have no GPU: there it grades correctness only, on the CPU
# backend; the course times submissions on its own GPU machine (make grade; README.md). With the rubric's
# [service] url set, ASSIGNMENT_TOKEN=path (an assignment token: bin/grader tokens) puts the service and that token
# into the zip: each submission is then sent to the course's grading service and graded on its GPU, and graded on
# Gradescope's CPU only when the service cannot (grader/gradescope/bridge.py). Keep such a zip among the staff.
gradescope:
	grader/gradescope/make_zip.sh dist/gradescope-autograder.zip $(ASSIGNMENT_TOKEN)
	@echo "wrote dist/gradescope-autograder.zip: upload it as the assignment's autograder"

# The starter's harness alone (make registry prints its task registry into starter/harness/registry.json).
harness: deps-headers
	$(STARTER) harness

# The handout: handout/assignment.md filled from the rubric, the registry and the
# solution's measured record (starter/bench/reference.json), its plots drawn from
# that record by starter/bench/plot_bench.py, then pandoc: handout/build/.
handout: deps-pandoc $(PYTHON_READY)
	@command -v pandoc >/dev/null || { echo "make handout: pandoc is not installed (https://pandoc.org)" >&2; exit 1; }
	$(PYTHON) -m handout $(RECORD_ARG)

# The student tarball (reproducible: SOURCE_DATE_EPOCH, else the last commit's time).
dist: deps-headers deps-pandoc $(PYTHON_READY)
	$(PYTHON) -m release dist $(RECORD_ARG) $(if $(DEPS_INCLUDE),--deps-include $(DEPS_INCLUDE))

# REQUIRE_BROWSER_TESTS=1 (CI sets it) installs the browser, and the leaderboard's browser test must run;
# REQUIRE_SLURM_TESTS=1 (CI too) installs Slurm, and the single-host Slurm tests must run;
# REQUIRE_PORTABLE_TESTS=1 (CI too) installs clang 13 and 19, the aarch64 cross compiler and qemu-user, and the
# CPU backend's portability tests (solution/tests/test_cpu_portable.py) must run.
check: deps deps-pandoc build $(if $(filter-out 0,$(REQUIRE_BROWSER_TESTS)),deps-browser) \
       $(if $(filter-out 0,$(REQUIRE_SLURM_TESTS)),deps-slurm) $(if $(filter-out 0,$(REQUIRE_PORTABLE_TESTS)),deps-portable)
	$(STARTER) unit
	$(PYTHON) -m pytest -ra $(PYTEST_ARGS)

# The CPU runtime's own tests (starter/cpu/tests/run_tests.py: doctest over the runtime, the textbook kernels and the
# planted bugs, then the driver's tests), alone: `make check` runs them too, as one slow item
# (solution/tests/test_cpu_runtime_suite.py); here doctest's options go after `--` (ARGS="-- -tc=*shuffle*").
check-cpu-runtime: deps-headers
	$(PYTHON) starter/cpu/tests/run_tests.py $(ARGS)

# The fast tier: every test not marked `slow` (conftest.py marks the tests that build, sandbox, or start Slurm, a
# browser or a GPU), with no `make build` first, on every core (pytest-xdist, where it is installed; one test file
# to a worker, so a file's fixtures are made once). The compilers, make, bubblewrap, Slurm and Chromium are
# stand-ins on its PATH and in BWRAP (CXX and CC unset) that fail and write down who started them; any such start
# fails the run, even one a test caught and skipped on, so a test that needs them cannot slip into the fast tier.
FAST_TIER_REFUSED := nvcc g++ gcc cc c++ clang clang++ make bwrap sbatch srun salloc squeue scontrol slurmctld slurmd \
                     munged chromium chromedriver compute-sanitizer
# Two workers more than cores: its tests wait for servers and clients about a third of their time (on the 2-core
# machine: 2:10 on 2 workers, 1:57 on 3, 1:51 on 4; docs/ci-time.md). CUDACPU_CLANG: the nvcc-rules check
# (starter/cpu/driver/frontend.py) would find a versioned clang++-NN on PATH that no stand-in covers.
FAST_WORKERS := $(shell echo $$(( $(NPROC) + 2 )))
check-fast: deps
	@refused=$$(mktemp -d) || exit 1; trap 'rm -rf "$$refused"' EXIT; \
	for tool in $(FAST_TIER_REFUSED); do \
	  printf '#!/bin/sh\necho "  %s, by $${PYTEST_CURRENT_TEST:-a process that did not say which test}" >> %s/started\n%s\nexit 97\n' \
	    $$tool $$refused "echo 'check-fast: $$tool is refused in the fast tier' >&2" > $$refused/$$tool \
	    && chmod +x $$refused/$$tool || exit 1; \
	done; \
	workers=$$($(PYTHON) -c 'import xdist' 2>/dev/null && printf '%s' '-n $(FAST_WORKERS) --dist loadfile --no-loadscope-reorder'); \
	env -u CXX -u CC BWRAP=$$refused/bwrap CUDACPU_CLANG=clang++ PATH=$$refused:$$PATH $(PYTHON) -m pytest -ra -m "not slow" $$workers $(PYTEST_ARGS); status=$$?; \
	if [ -s $$refused/started ]; then \
	  echo "make check-fast: tests of the fast tier started tools of the slow one; mark them slow (conftest.py):" >&2; \
	  sort -u $$refused/started >&2; exit 1; \
	fi; exit $$status

build: deps-headers
	$(STARTER) all unit-bin
	$(SOLUTION) all

data: deps build
	$(PYTHON) data/generate.py --harness starter/build/starter/harness

# The solution's performance counters (make profile's "solution" column), on the CPU backend:
# no GPU needed. Rerun and commit starter/bench/profile-reference.json when solution/kernels change.
profile-reference: deps-headers
	$(SOLUTION) CPU=1 race-harness
	$(PYTHON) starter/tools/profile.py --harness starter/build/on-cpu/solution/racecheck/harness \
	  --write-reference solution/kernels --reference starter/bench/profile-reference.json
	@echo "wrote starter/bench/profile-reference.json"

registry: deps-headers
	$(STARTER) harness
	starter/build/starter/harness --list-tasks --json | $(PYTHON_FOR_JSON) > starter/harness/registry.json
	@echo "wrote starter/harness/registry.json"

deps: deps-headers deps-sandbox deps-similarity $(PYTHON_READY)

# Debian's similarity-tester (sim_c), which `grader similarity` compares submissions with. Where it cannot be
# installed (the GPU machines reach no package index) only that command and its tests go without it.
deps-similarity:
	@command -v sim_c >/dev/null || { \
	  echo "Installing similarity-tester"; \
	  { command -v apt-get >/dev/null && { $(SUDO) apt-get install -y -q similarity-tester \
	      || { $(SUDO) timeout 120 apt-get update -q && $(SUDO) apt-get install -y -q similarity-tester; }; }; } \
	  || echo "WARNING: similarity-tester could not be installed: bin/grader similarity needs it (sim_c)." >&2; }

# bubblewrap, which every build and run of student code goes through (grader/run/sandbox.py), and libseccomp.
deps-sandbox:
	@if [ -n "$(BWRAP)" ]; then test -x "$(BWRAP)" || { echo "BWRAP=$(BWRAP) is not an executable" >&2; exit 1; }; \
	elif ! command -v bwrap >/dev/null; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "Missing bubblewrap (bwrap): install it, or set BWRAP=path/to/bwrap." >&2; exit 1; fi; \
	  echo "Installing bubblewrap"; \
	  $(SUDO) apt-get install -y -q bubblewrap || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q bubblewrap; }; \
	fi
	@{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libseccomp\.so\.2 ' || { \
	  echo "Installing libseccomp2 (the sandbox builds its seccomp filters with it)"; \
	  $(SUDO) apt-get install -y -q libseccomp2 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q libseccomp2; }; }

# Debian's packages where the headers are missing; DEPS_INCLUDE=dir skips this (Boost.Context is still looked for).
# Boost.Context is wanted, not needed: without it the CPU backend switches fibers with ucontext (slower, and it
# says so), so a machine that cannot install it (the GPU machines reach no package index) goes on with a warning.
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
	@for pair in $(CPU_PACKAGES); do \
	  header=$${pair%%:*}; package=$${pair##*:}; \
	  echo "#include <$$header>" | $(CXX) -std=c++17 -x c++ -fsyntax-only $(if $(DEPS_INCLUDE),-isystem $(DEPS_INCLUDE)) - 2>/dev/null \
	    || { command -v apt-get >/dev/null && { echo "Installing $$package"; \
	           $(SUDO) apt-get install -y -q $$package || { $(SUDO) timeout 120 apt-get update -q && \
	             $(SUDO) apt-get install -y -q $$package; }; }; } \
	    || echo "WARNING: $$package could not be installed: the CPU backend's fibers use ucontext instead (slower)." >&2; \
	done

# pandoc renders the handout (Debian's package); make check, handout and dist
# need it. Where it cannot be installed (the GPU machines reach no package index;
# apt gets two minutes to find out) make check skips, and lists, the tests that
# need it.
deps-pandoc:
	@command -v pandoc >/dev/null || { \
	  echo "Installing pandoc"; \
	  { command -v apt-get >/dev/null && { $(SUDO) apt-get install -y -q pandoc \
	      || { $(SUDO) timeout 120 apt-get update -q && $(SUDO) apt-get install -y -q pandoc; }; }; } \
	  || echo "WARNING: pandoc could not be installed: make handout and make dist need it (https://pandoc.org)." >&2; }

# Debian's Slurm and MUNGE, for the tests that start a private single-host Slurm (grader/tests/test_slurm_cluster.py,
# root only; they skip, listed, without them). Nothing is started or configured here: the tests bring their own
# slurm.conf, key and daemons. A machine without a package index unpacks the debs instead (docs/slurm.md).
SLURM_PACKAGES := slurmctld slurmd slurm-client munge
deps-slurm:
	@missing=""; for p in slurmctld slurmd sbatch munged; do command -v $$p >/dev/null || test -x /usr/sbin/$$p || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "Missing Slurm: install $(SLURM_PACKAGES), or unpack their debs (docs/slurm.md)." >&2; exit 1; fi; \
	  echo "Installing $(SLURM_PACKAGES)"; \
	  $(SUDO) apt-get install -y -q --no-install-recommends $(SLURM_PACKAGES) \
	    || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends $(SLURM_PACKAGES); }; \
	fi

# For the CPU backend's portability tests (solution/tests/test_cpu_portable.py): Debian 12's oldest and newest
# clang (13, 19, with 19's sanitizer runtimes), its aarch64 cross compiler and qemu-user; and, in .deps/aarch64,
# what the cross build needs from the arm64 side: Boost.Context's arm64 library, the package libboost-context-dev
# names for arm64 (the same Boost version as this machine's headers), unpacked (apt-get download with arm64 package
# lists of its own, in .deps/apt-arm64: the machine's dpkg stays single-architecture), and links to the
# architecture-independent headers (Boost, doctest, nlohmann-json, CLI11), which the cross compiler does not look
# for in /usr/include.
PORTABLE_PACKAGES := clang-13 clang-19 libclang-rt-19-dev g++-aarch64-linux-gnu qemu-user
AARCH64_ROOT      := .deps/aarch64/usr
AARCH64_APT       := -oAPT::Architecture=arm64 -oAPT::Architectures=arm64 -oDir::State::Lists=$(CURDIR)/.deps/apt-arm64/lists \
                     -oDir::Cache=$(CURDIR)/.deps/apt-arm64/cache
deps-portable: deps-headers
	@missing=""; for t in clang++-13 clang++-19 aarch64-linux-gnu-g++ qemu-aarch64; do command -v $$t >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then echo "Missing $(PORTABLE_PACKAGES): install them." >&2; exit 1; fi; \
	  echo "Installing $(PORTABLE_PACKAGES)"; \
	  $(SUDO) apt-get install -y -q --no-install-recommends $(PORTABLE_PACKAGES) \
	    || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends $(PORTABLE_PACKAGES); }; \
	fi
	@if [ ! -f $(AARCH64_ROOT)/lib/aarch64-linux-gnu/libboost_context.a ]; then \
	  echo "Unpacking Boost.Context for arm64 into $(AARCH64_ROOT)"; \
	  mkdir -p .deps/apt-arm64/lists/partial .deps/apt-arm64/cache/archives/partial .deps/apt-arm64/debs && \
	  apt-get $(AARCH64_APT) update -q >/dev/null && \
	  package=$$(apt-cache $(AARCH64_APT) depends libboost-context-dev:arm64 | sed -n 's/.*Depends: \(libboost-context[0-9.]*-dev\).*/\1/p' | head -n1) && \
	  (cd .deps/apt-arm64/debs && apt-get $(AARCH64_APT) download $$package:arm64) && \
	  dpkg -x .deps/apt-arm64/debs/$${package}_*_arm64.deb .deps/aarch64 || exit 1; \
	fi
	@mkdir -p $(AARCH64_ROOT)/include
	@for h in boost doctest nlohmann CLI; do ln -sfn /usr/include/$$h $(AARCH64_ROOT)/include/$$h; done

# Chromium and chromedriver for the leaderboard's browser test (Debian's chromium, chromium-driver).
deps-browser:
	@if ! { command -v chromium || command -v chromium-browser || command -v google-chrome; } >/dev/null \
	    || ! { command -v chromedriver || test -x /usr/lib/chromium/chromedriver; } >/dev/null; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "Chromium and chromedriver are missing: install them (Debian: chromium chromium-driver)." >&2; exit 1; fi; \
	  echo "Installing chromium chromium-driver"; \
	  $(SUDO) apt-get install -y -q chromium chromium-driver \
	    || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium chromium-driver; }; \
	fi

.venv/.installed: $(PY_REQS)
	python3 -m venv --system-site-packages .venv
	.venv/bin/pip install -q $(addprefix -r ,$(PY_REQS))
	touch $@
