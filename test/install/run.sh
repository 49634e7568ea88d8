#!/usr/bin/env bash
# make test-install: installs into a temporary prefix, then builds test/install/hello.c against it
# with pkg-config (the shared library; the static one through Libs.private and through
# parallelformers-static.pc) and with CMake (find_package of the installed package config, shared
# and static; add_subdirectory of this tree). Each program must print the library's version and
# the ids build/generate prints for the same prompt; the tools run from the prefix's bin. Ends
# with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/../.."
MAKE=${MAKE:-make} CC=${CC:-cc} BUILD=${BUILD:-build}
fixture=$PWD/test/fixtures/gpt2-tiny
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pf_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

$MAKE --no-print-directory -s install PREFIX="$prefix" BUILD="$BUILD" ${CUDA:+CUDA=$CUDA} >/dev/null
version=$(sed -n 's/^#define PF_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' parallelformers.h | paste -sd.)
want_ids=$("$BUILD/generate" "$fixture" --ids 391,330,11 -n 4 --gpus 2 --device cpu | tail -n 1)

passed=0 failed=0
# check NAME PROGRAM [NEEDED]: PROGRAM must print the version and want_ids; NEEDED says whether it
# must load libparallelformers.so (shared) or not (static).
check() {
    local name=$1 program=$2 needed=${3:-} out
    if ! out=$("$program" "$fixture" 2>&1); then
        echo "FAIL $name: $program: $out"
    elif [ "$(head -n 1 <<<"$out" | cut -d' ' -f1)" != "$version" ] || [ "$(tail -n 1 <<<"$out")" != "$want_ids" ]; then
        echo "FAIL $name: printed \"$out\", want version $version and ids $want_ids"
    elif [ "$needed" = shared ] && ! readelf -d "$program" | grep -q "NEEDED.*libparallelformers\.so\.${version%%.*}\]"; then
        echo "FAIL $name: $program does not load libparallelformers.so.${version%%.*}"
    elif [ "$needed" = static ] && readelf -d "$program" | grep -q "NEEDED.*libparallelformers"; then
        echo "FAIL $name: $program loads libparallelformers.so"
    else
        echo "ok   $name"
        passed=$((passed + 1))
        return
    fi
    failed=$((failed + 1))
}
# build NAME COMMAND...: runs a build, reporting its output only when it fails.
build() {
    local name=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then return 0; fi
    echo "FAIL $name: $*"
    cat "$tmp/log"
    failed=$((failed + 1))
    return 1
}

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
libdir=$(pkg-config --variable=libdir parallelformers)
if [ "$(pkg-config --modversion parallelformers)" = "$version" ]; then
    echo "ok   pkg-config --modversion"
    passed=$((passed + 1))
else
    echo "FAIL pkg-config --modversion: $(pkg-config --modversion parallelformers), want $version"
    failed=$((failed + 1))
fi

# shellcheck disable=SC2046 # pkg-config's output is a list of words
build "pkg-config, shared" $CC test/install/hello.c -o "$tmp/hello_shared" $(pkg-config --cflags --libs parallelformers) \
    -Wl,-rpath,"$libdir" && check "pkg-config, shared" "$tmp/hello_shared" shared
# The archive by name; the .so that -lparallelformers also finds is then left out as not needed.
# shellcheck disable=SC2046
build "pkg-config --static" $CC -Wl,--as-needed test/install/hello.c -o "$tmp/hello_static" "$libdir/libparallelformers.a" \
    $(pkg-config --cflags --libs --static parallelformers) && check "pkg-config --static" "$tmp/hello_static" static
# shellcheck disable=SC2046
build "pkg-config parallelformers-static" $CC test/install/hello.c -o "$tmp/hello_static_pc" \
    $(pkg-config --cflags --libs parallelformers-static) && check "pkg-config parallelformers-static" "$tmp/hello_static_pc" static

if command -v cmake >/dev/null; then
    if build "cmake find_package" cmake -S test/install -B "$tmp/cmake" -DCMAKE_C_COMPILER="$CC" \
            -DCMAKE_PREFIX_PATH="$prefix" -DPF_WANT_VERSION="$version" &&
        build "cmake find_package" cmake --build "$tmp/cmake"; then
        check "cmake find_package, shared" "$tmp/cmake/hello_shared" shared
        check "cmake find_package, static" "$tmp/cmake/hello_static" static
    fi
    # CMake builds the backends make built (CUDA=0 or 1), not what it finds itself.
    cuda_option=()
    [ -n "${CUDA:-}" ] && cuda_option=("-DPF_CUDA=$([ "$CUDA" = 1 ] && echo ON || echo OFF)")
    if build "cmake add_subdirectory" cmake -S test/install -B "$tmp/cmake_sub" -DCMAKE_C_COMPILER="$CC" \
            -DPF_SOURCE_DIR="$PWD" "${cuda_option[@]}" &&
        build "cmake add_subdirectory" cmake --build "$tmp/cmake_sub" -j 2; then
        check "cmake add_subdirectory" "$tmp/cmake_sub/hello_subdirectory" static
    fi
else
    echo "FAIL cmake is not installed"
    failed=$((failed + 1))
fi

# The tools, on the prefix's PATH: pf-generate gives build/generate's ids, the others answer --help.
if [ "$(PATH="$prefix/bin:$PATH" pf-generate "$fixture" --ids 391,330,11 -n 4 --gpus 2 --device cpu 2>&1 | tail -n 1)" = "$want_ids" ]; then
    echo "ok   pf-generate on the prefix's PATH"
    passed=$((passed + 1))
else
    echo "FAIL pf-generate on the prefix's PATH"
    failed=$((failed + 1))
fi
tools=(pf-tokenize pf-quantize pf-embed pf-classify pf-classify-image pf-transcribe)
[ -x "$BUILD/server" ] && tools+=(pf-server)
for tool in "${tools[@]}"; do
    if PATH="$prefix/bin:$PATH" "$tool" --help >/dev/null 2>&1; then
        echo "ok   $tool --help"
        passed=$((passed + 1))
    else
        echo "FAIL $tool --help"
        failed=$((failed + 1))
    fi
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
