# parallelformers: `make` builds the library, examples and tests into build/; `make test` runs the
# suite. nvcc on the PATH turns on the CUDA backend (kernels.cu); `make CUDA=0` builds for the CPU
# with nothing but a C compiler, pthreads and libm.

CC       ?= cc
CXX      ?= c++
NVCC     ?= nvcc
CUDA_HOME ?= /usr/local/cuda
CUDA     ?= $(if $(shell command -v $(NVCC) 2>/dev/null),1,0)
BUILD    ?= build

CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra
BASE     := -std=c99 $(WARN) -pthread
LDLIBS   := -lpthread -lm
# The tests use POSIX calls (popen, mkdtemp) and a fault-injection hook in the library.
TEST_DEFS := -D_POSIX_C_SOURCE=200809L -DPF_TESTING

LIB_SRC  := parallelformers.c parallelformers.h policies.inc $(wildcard *.part.c) $(BUILD)/cuda-$(CUDA).stamp
TESTS    := test/test_main.c test/test_util.c test/test_models.c test/test_bad_input.c test/test_config.c test/test_cli.c test/test_tokenizer.c test/test_generation.c test/test_fuzz.c

ifeq ($(CUDA),1)
CUDA_DEFS := -DPF_CUDA
CUDA_OBJ  := $(BUILD)/kernels.o
# NCCL outside the toolkit (the nvidia-nccl wheel that comes with torch, say): NCCL_HOME holds
# include/nccl.h and lib/libnccl.so.2.
ifneq ($(NCCL_HOME),)
NCCL_CFLAGS := -I$(NCCL_HOME)/include
NCCL_LINK   := -L$(NCCL_HOME)/lib -Wl,-rpath,$(NCCL_HOME)/lib -l:libnccl.so.2
else
NCCL_LINK   := -lnccl
endif
# Toolkits put their libraries in lib64 or lib.
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib \
             -lcudart -lcublas $(NCCL_LINK) -lstdc++
NVCCFLAGS ?= -O2 -std=c++17 -arch=sm_90 -Xcompiler -Wall,-Wextra
BENCH_DEFS := -I$(CUDA_HOME)/include
endif

.PHONY: all test test-asan test-tsan test-cuda test-cuda-sanitize test-cuda-standin valgrind clean bench

all: $(BUILD)/libparallelformers.a $(BUILD)/generate $(BUILD)/test_parallelformers $(BUILD)/test_cuda \
     $(BUILD)/bench $(BUILD)/header_cxx.o

$(BUILD):
	mkdir -p $(BUILD)

# Switching CUDA=0/1 in one build directory rebuilds the library instead of reusing it.
$(BUILD)/cuda-$(CUDA).stamp: | $(BUILD)
	rm -f $(BUILD)/cuda-*.stamp
	touch $@

$(BUILD)/parallelformers.o: $(LIB_SRC) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(CUDA_DEFS) -c parallelformers.c -o $@

$(BUILD)/parallelformers_testing.o: $(LIB_SRC) | $(BUILD)
	$(CC) $(BASE) $(CFLAGS) $(CUDA_DEFS) -DPF_TESTING -c parallelformers.c -o $@

$(BUILD)/kernels.o: kernels.cu | $(BUILD)
	$(NVCC) $(NVCCFLAGS) $(NCCL_CFLAGS) -c kernels.cu -o $@

$(BUILD)/libparallelformers.a: $(BUILD)/parallelformers.o $(CUDA_OBJ)
	ar rcs $@ $^

$(BUILD)/generate: examples/generate.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/generate.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/test_parallelformers: $(TESTS) test/test.h $(BUILD)/parallelformers_testing.o $(CUDA_OBJ)
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) $(TESTS) $(BUILD)/parallelformers_testing.o $(CUDA_OBJ) -o $@ $(CUDA_LIBS) $(LDLIBS)

# Every fixture on the CUDA backend against the CPU backend and transformers; prints that it
# skipped where there is no GPU (or no CUDA in the build).
$(BUILD)/test_cuda: test/test_cuda.c test/test_util.c test/test.h $(BUILD)/parallelformers_testing.o $(CUDA_OBJ)
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) test/test_cuda.c test/test_util.c $(BUILD)/parallelformers_testing.o $(CUDA_OBJ) -o $@ $(CUDA_LIBS) $(LDLIBS)

test-cuda: $(BUILD)/test_cuda
	$(BUILD)/test_cuda test/fixtures

# SANITIZE_FIXTURES="gpt2-tiny llama" limits the (slow) sanitizer runs to those fixtures.
test-cuda-sanitize: $(BUILD)/test_cuda
	compute-sanitizer --tool memcheck --error-exitcode 1 $(BUILD)/test_cuda test/fixtures $(SANITIZE_FIXTURES)
	compute-sanitizer --tool racecheck --error-exitcode 1 $(BUILD)/test_cuda test/fixtures $(SANITIZE_FIXTURES)

# The CUDA section's host side (and test_cuda itself) against test/cuda_standin.c, a host-memory
# stand-in for kernels.cu's ABI that mirrors each kernel's arithmetic: runs without a GPU, and
# without nvcc. The ABI's declarations are cut from parallelformers.c so both sides must agree.
STANDIN := $(BUILD)/standin
$(STANDIN)/cuda_abi.h: parallelformers.c | $(BUILD)
	mkdir -p $(STANDIN)
	printf '#include <stddef.h>\n#include <stdint.h>\n' > $@
	awk '/^typedef struct pf_cuda_rank pf_cuda_rank;/{p=1} /^\/\* ---- state ---- \*\//{p=0} p' parallelformers.c >> $@

$(STANDIN)/test_cuda: test/test_cuda.c test/test_util.c test/test.h test/cuda_standin.c $(STANDIN)/cuda_abi.h $(LIB_SRC)
	$(CC) $(BASE) $(CFLAGS) -DPF_CUDA -DPF_TESTING -c parallelformers.c -o $(STANDIN)/parallelformers.o
	$(CC) -std=gnu11 $(WARN) -pthread $(CFLAGS) -D_GNU_SOURCE -include $(STANDIN)/cuda_abi.h -c test/cuda_standin.c -o $(STANDIN)/cuda_standin.o
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) test/test_cuda.c test/test_util.c $(STANDIN)/parallelformers.o $(STANDIN)/cuda_standin.o -o $@ $(LDLIBS)

test-cuda-standin: $(STANDIN)/test_cuda
	$(STANDIN)/test_cuda test/fixtures

# Throughput on random-weight models of real shapes, against transformers when Python has it;
# BENCH_ARGS passes options (build/bench --help).
$(BUILD)/bench: examples/bench.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) $(CUDA_DEFS) $(BENCH_DEFS) -D_POSIX_C_SOURCE=200809L examples/bench.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

bench: $(BUILD)/bench
	$(BUILD)/bench $(BENCH_ARGS)

# The public header must compile as C++ too.
$(BUILD)/header_cxx.o: parallelformers.h | $(BUILD)
	echo '#include "parallelformers.h"' | $(CXX) -Wall -Wextra -Werror -I. -x c++ -c - -o $@

test: all
	$(BUILD)/test_parallelformers test/fixtures $(BUILD)/generate

# AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer, CPU build; float-to-int
# overflow is not part of "undefined" and is asked for by name.
test-asan:
	$(MAKE) BUILD=build/asan CUDA=0 CFLAGS="-O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all" test

# ThreadSanitizer for the rank threads.
test-tsan:
	$(MAKE) BUILD=build/tsan CUDA=0 CFLAGS="-O1 -g -fsanitize=thread" test

# valgrind over 20 cycles of load, every request kind (beam search first, on fresh buffers) and
# free, CPU build: any error or leak fails it.
VALGRIND_FIXTURES ?= test/fixtures/gpt2-tiny test/fixtures/llama
$(BUILD)/valgrind_cycles: test/valgrind_cycles.c $(LIB_SRC) | $(BUILD)
	$(CC) $(BASE) -O1 -g -D_POSIX_C_SOURCE=200809L test/valgrind_cycles.c parallelformers.c -o $@ $(LDLIBS)

valgrind: $(BUILD)/valgrind_cycles
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    $(BUILD)/valgrind_cycles $(VALGRIND_FIXTURES) -n 20

clean:
	rm -rf build
