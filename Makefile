# mmsim front door. `make demo` and `make test` work on a fresh Debian 12
# machine: they install what is missing (as root), configure, build and run.
PRESET   ?= release
BUILD    := build/$(PRESET)
JOBS     ?= 2
MMSIM    := $(BUILD)/src/cli/mmsim
DEB_PKGS := g++ cmake ninja-build make libgtest-dev libgmock-dev libbenchmark-dev \
            libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev python3

.PHONY: all deps configure build demo test bench clean

all: build

# Installs the Debian packages that are missing; without root it names them and stops.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing Debian packages:$$missing"; echo "run as root, or: sudo apt-get install$$missing"; exit 1; \
	  fi; \
	fi

configure: deps
	@test -f $(BUILD)/build.ninja || cmake --preset $(PRESET) >/dev/null

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

clean:
	rm -rf build
