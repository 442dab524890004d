# SPDX-License-Identifier: MIT
# Thin wrapper over CMake so the usual verbs work from a fresh clone.
#   make        build everything (build/liblithe.so, build/liblithe.a, tools, benchmarks)
#   make lib    the library only: build/liblithe.so, build/liblithe.a (no tests,
#               benchmarks or tools; also cmake -DLITHE_BUILD_TESTS=OFF -DLITHE_BUILD_BENCH=OFF)
#   make test   build, then run every CTest test
#   make bench  build, then run the default allocator comparison (report in build/bench-report/)
#   make install [PREFIX=/usr/local] [DESTDIR=]   library, header, pkg-config, CMake package,
#               man pages, the `lithe` launcher, the hardened and valgrind libraries
#               (lib/lithe/) and lithe-bench (cmake --install underneath)
#   make uninstall  remove what the last make install put there (its manifest)
#   make deb    build/deb/liblithe0_*.deb, liblithe-dev_*.deb, lithe-bench_*.deb (dpkg-deb;
#               built in build/deb-tree with libdir lib/<multiarch triplet>)
#   make debug  build-debug/: lithe with its assertions and lock-rank checks
#               (CMAKE_BUILD_TYPE=Debug); `make test` runs the suite on it too
#   make secure build/liblithe-secure.so: the hardened build (docs/reliability.md)
#   make valgrind build/liblithe-valgrind.so: memcheck client requests, for
#               LD_PRELOAD=build/liblithe-valgrind.so valgrind --leak-check=full PROG
#   make soak [SOAK_SECONDS=1800] [SOAK_THREADS=4]  long mixed multi-threaded
#               run with content checks (not part of make test)
BUILD ?= build
DEBUG_BUILD ?= build-debug
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX ?= /usr/local
# the files make install wrote (with DESTDIR), for make uninstall; CMake's own
# install_manifest.txt (without DESTDIR) is rewritten by every install, the tests' too
MANIFEST = $(BUILD)/lithe-install-manifest.txt

.PHONY: all lib test bench clean install uninstall deb debug test-debug secure valgrind soak

all:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

lib:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target lithe lithe-static

test: all debug
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-debug

debug:
	@cmake -S . -B $(DEBUG_BUILD) -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(DEBUG_BUILD) -j $(JOBS)

secure: all
	@ls -l $(BUILD)/liblithe-secure.so

valgrind: all
	@ls -l $(BUILD)/liblithe-valgrind.so

SOAK_SECONDS ?= 1800
SOAK_THREADS ?= 4
soak: all
	$(BUILD)/tests/stress/lithe-soak $(SOAK_SECONDS) $(SOAK_THREADS)

# the whole suite against the Debug build, but the fuzzers (they build
# lithe's sources themselves, with sanitizers, the same in both builds) and
# the packaging tests (they check a release install's file list)
test-debug: debug
	cd $(DEBUG_BUILD) && ctest --output-on-failure -j $(JOBS) -LE 'fuzz|install'

bench: all
	$(BUILD)/lithe-bench --out $(BUILD)/bench-report glibc jemalloc mimalloc tcmalloc lithe=$(BUILD)/liblithe.so

install: all
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"
	{ sed 's|^|$(DESTDIR)|' $(BUILD)/install_manifest.txt; echo; } > $(MANIFEST)
	@echo "installed into $(DESTDIR)$(PREFIX) (file list: $(MANIFEST))"

uninstall:
	bash packaging/uninstall.sh $(MANIFEST)

deb: all
	bash packaging/deb.sh $(BUILD) $(BUILD)/deb

clean:
	rm -rf $(BUILD) $(DEBUG_BUILD)
