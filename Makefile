# Thin wrapper over CMake so the usual verbs work from a fresh clone.
#   make        build everything (build/liblithe.so, build/liblithe.a, tools, benchmarks)
#   make test   build, then run every CTest test
#   make bench  build, then run the default allocator comparison (report in build/bench-report/)
BUILD ?= build
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all test bench clean

all:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: all
	$(BUILD)/lithe-bench --out $(BUILD)/bench-report glibc jemalloc mimalloc tcmalloc lithe=$(BUILD)/liblithe.so

clean:
	rm -rf $(BUILD)
