# mmsim front door. `make demo` and `make test` work on a fresh Debian 12
# machine: they install what is missing (as root), configure, build and run.
#
#   make demo | test | bench     build (preset PRESET, default release) and run
#   make test WERROR=1           the same with -Werror (MMSIM_WERROR=ON)
#   make asan-test               the suite under AddressSanitizer + UBSan (preset asan)
#   make scenarios-check         every scenarios/*.toml (and subdirectories) with --check
#   make format | format-check   clang-format the sources / list files that are not
#   make tidy                    clang-tidy (.clang-tidy) over src/
#   make lint                    tidy plus the self-test of the build's layering rule
#   make fuzz FUZZ_SECONDS=N     libFuzzer targets in fuzz/ (preset fuzz, clang-16), N s each; FUZZ_PROCS=1 leaves a core free
#                                (default 60); fails if they find something (fuzz/README.md)
#   make validate                validate/*.toml on real kernels in QEMU -> docs/validation.md
#   make validate-quick          one short validation scenario on 6.1 (what CI runs)
#   make kernel-source           unpack Debian's 6.1 and 6.12 kernel sources (to read, never copy)
PRESET   ?= release
BUILD    := build/$(PRESET)
JOBS     ?= 2
WERROR   ?= 0
MMSIM    := $(BUILD)/src/cli/mmsim
DEB_PKGS := g++ cmake ninja-build make libgtest-dev libgmock-dev libbenchmark-dev \
            libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev python3 \
            clang-format clang-tidy qemu-system-x86 busybox-static gnuplot-nox
CLANG_FORMAT   ?= clang-format
CLANG_TIDY     ?= clang-tidy
FORMAT_DIRS    := src tests bench tools fuzz
ASAN_ENV       := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# `make fuzz` only: clang 15+ (clang-14 cannot compile libstdc++ 12's <source_location>),
# its runtime with libFuzzer, and llvm-symbolizer (package llvm) for the reports' stacks.
FUZZ_DEB_PKGS  := clang-16 libclang-rt-16-dev llvm
FUZZ_SECONDS   ?= 60
FUZZ_TARGETS   ?= fuzz_scenario_load fuzz_scenario_run
# `make validate`: the kernels (default: each scenario's [validate] kernels),
# where kernels and kernel sources are cached.
VALIDATE_KERNELS ?=
MMSIM_CACHE      ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/mmsim

ifeq ($(WERROR),1)
  WERROR_CMAKE := ON
else
  WERROR_CMAKE := OFF
endif

.PHONY: all deps configure build demo test bench clean asan-test format format-check tidy \
        scenarios-check lint fuzz validate validate-quick kernel-source apt-lists sweep-test figures

all: build

# Installs the Debian packages that are missing; without root it names them and stops.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing Debian packages:$$missing"; echo "run as root, or: sudo apt-get install$$missing"; exit 1; \
	  fi; \
	fi

# Configures once; again when WERROR differs from the build dir's MMSIM_WERROR.
configure: deps
	@have=$$(sed -n 's/^MMSIM_WERROR:BOOL=//p' $(BUILD)/CMakeCache.txt 2>/dev/null); \
	if [ ! -f $(BUILD)/build.ninja ] || [ "$$have" != "$(WERROR_CMAKE)" ]; then \
	  cmake --preset $(PRESET) -DMMSIM_WERROR=$(WERROR_CMAKE) >/dev/null || exit 1; \
	fi

build: configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(MMSIM) run scenarios/seed-a-numa-shared-cow.toml
	$(MMSIM) run scenarios/seed-b-memcg-fault-drop.toml

test: build
	ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure

bench: build
	bash bench/run_scenarios.sh $(MMSIM)
	$(BUILD)/bench/mmsim_bench --benchmark_min_time=0.2

# The whole suite built with -fsanitize=address,undefined (build/asan, RelWithDebInfo).
asan-test: deps
	$(MAKE) --no-print-directory build PRESET=asan
	$(ASAN_ENV) ctest --test-dir build/asan -j $(JOBS) --output-on-failure

# Runs every scenario with the checker; fails if any exits non-zero.
scenarios-check: configure
	cmake --build $(BUILD) -j $(JOBS) --target mmsim
	@failed=""; n=0; out=$$(mktemp); \
	for f in scenarios/*.toml scenarios/*/*.toml; do \
	  n=$$((n + 1)); \
	  if $(MMSIM) run $$f --check --no-timing >$$out 2>&1; then \
	    echo "ok    $$f"; \
	  else \
	    rc=$$?; echo "FAIL  $$f (exit $$rc)"; tail -n 20 $$out | sed 's/^/      /'; failed="$$failed $$f"; \
	  fi; \
	done; rm -f $$out; \
	if [ -n "$$failed" ]; then echo "scenarios-check: failed:$$failed"; exit 1; fi; \
	echo "scenarios-check: all $$n scenarios pass"

# The libFuzzer targets (build/fuzz, clang-16 with ASan + UBSan), then each for
# FUZZ_SECONDS, at most FUZZ_PROCS (default 2) fuzzing processes at once (fuzz/run.sh); corpora in
# build/fuzz/corpus/<target>, findings in build/fuzz/findings/<target>/.
fuzz:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(DEB_PKGS) $(FUZZ_DEB_PKGS)"
	@$(MAKE) --no-print-directory configure PRESET=fuzz
	cmake --build build/fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	bash fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

FORMAT_FILES = $(shell find $(FORMAT_DIRS) -type f \( -name '*.h' -o -name '*.cc' \) | LC_ALL=C sort)

format: deps
	@$(CLANG_FORMAT) -i $(FORMAT_FILES)
	@echo "clang-formatted $(words $(FORMAT_FILES)) files"

# Lists the files clang-format would change (`make format` fixes them).
format-check: deps
	@bad=""; for f in $(FORMAT_FILES); do \
	  $(CLANG_FORMAT) --dry-run --Werror $$f >/dev/null 2>&1 || bad="$$bad $$f"; \
	done; \
	if [ -n "$$bad" ]; then \
	  echo "not clang-format clean (run \`make format\`):"; for f in $$bad; do echo "  $$f"; done; exit 1; \
	fi; \
	echo "format-check: $(words $(FORMAT_FILES)) files are clang-format clean"

# clang-tidy (checks in .clang-tidy) over the src/ files of $(BUILD)/compile_commands.json:
# each finding once, then a list per check; fails on any finding.
tidy: configure
	python3 tools/lint/tidy.py -p $(BUILD) -j $(JOBS) --clang-tidy $(CLANG_TIDY)

lint: tidy
	bash tools/lint/test_layers.sh

clean:
	rm -rf build

# apt's package lists, which a fresh machine may lack (validate fetches kernels with apt-get).
apt-lists:
	@apt-cache pkgnames linux-image-6.1 | grep -q . || { [ "$$(id -u)" = 0 ] && apt-get update -qq; } || true

# The validation suite: each validate/*.toml in a QEMU guest shaped as its
# machine, on each of its kernels (Debian's, fetched into $(MMSIM_CACHE)/kernels),
# beside its simulation; writes docs/validation.md (the tables, then
# validate/NOTES.md: what each disagreement comes from). Exit 4 from mmsim (a
# judged counter outside its tolerance) is a finding, reported there, not a failure.
validate: build apt-lists
	@$(MMSIM) validate validate/*.toml $(foreach k,$(VALIDATE_KERNELS),--kernel $(k)) \
	  --json $(BUILD)/validation.json --markdown $(BUILD)/validation-tables.md; \
	rc=$$?; if [ $$rc != 0 ] && [ $$rc != 4 ]; then exit $$rc; fi; \
	cat $(BUILD)/validation-tables.md validate/NOTES.md > docs/validation.md; \
	if [ $$rc = 4 ]; then echo "validate: some counters are outside their tolerance (docs/validation.md)"; fi

# One short scenario on 6.1, boot included: the path from a scenario to a real
# kernel and back, kept working by CI (a counter outside tolerance fails it).
validate-quick: build apt-lists
	$(MMSIM) validate validate/fork-cow-faults.toml --kernel 6.1 --repeat 1 --accel tcg

# The README's figures, from the seed A scenario: its counter timeline (sampled
# every 100 ms) and the compare of the shared-COW skip off and on (3 runs each).
figures: build
	$(MMSIM) run scenarios/seed-a-numa-shared-cow.toml --set scenario.sample_interval=0.1s \
	  --plot $(BUILD)/figures/seed-a >/dev/null
	$(MMSIM) compare scenarios/seed-a-numa-shared-cow.toml \
	  --vary numa.skip_shared_cow=false,true --repeat 3 --plot $(BUILD)/figures/seed-a-compare >/dev/null
	mkdir -p docs/figures
	cp $(BUILD)/figures/seed-a/timeline.png docs/figures/seed-a-timeline.png
	cp $(BUILD)/figures/seed-a-compare/compare.png docs/figures/seed-a-compare.png

# A sharded compare under GNU parallel and as a Slurm job array on a one-node
# cluster brought up on localhost (both installed from Debian when missing;
# Slurm needs root), each merged and checked byte for byte against the
# unsharded compare.
sweep-test: build
	bash tools/parallel/test-sweep.sh $(MMSIM)
	bash tools/slurm/test-sweep.sh $(MMSIM)

# Debian's sources of the kernels validate boots, unpacked under
# $(MMSIM_CACHE)/kernel-source/linux-source-<series> (read them; copy nothing).
kernel-source: deps
	bash tools/kernel-source.sh $(MMSIM_CACHE)/kernel-source 6.1 6.12
