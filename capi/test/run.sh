#!/usr/bin/env bash
# The C and C++ tests of libfaio.so. From the repository root (or anywhere):
#
#     bash capi/test/run.sh            # build, check the ABI, run the tests
#     bash capi/test/run.sh --bench    # also run the C benchmark
#
# Needs Go, gcc and g++ only. Builds go to build/capi-test/ (gitignored;
# override with FAIO_TEST_DIR). Each step prints PASS or FAIL; the test
# programs print one line per test case, counted the same way. Ends with
# "N passed, M failed" and exits non-zero on any failure.
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${FAIO_TEST_DIR:-$root/build/capi-test}
bench=0
for arg in "$@"; do
    case $arg in
    --bench) bench=1 ;;
    *) echo "usage: $0 [--bench]" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root" || exit 2

passed=0
failed=0
log=$out/step.log

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

# step NAME CMD...: runs CMD, output shown only on failure.
step() {
    local name=$1
    shift
    if "$@" >"$log" 2>&1; then
        pass "$name"
        return 0
    fi
    fail "$name"
    sed 's/^/    /' "$log"
    return 1
}

# A hung test must not hang CI: every program runs under a time limit when
# coreutils' timeout is there.
limit() {
    if command -v timeout >/dev/null 2>&1; then
        timeout 180 "$@"
    else
        "$@"
    fi
}

# run_cases NAME CMD...: runs a test program and counts its PASS/FAIL lines.
run_cases() {
    local name=$1
    shift
    local rc=0
    LD_LIBRARY_PATH=$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} limit "$@" >"$log" 2>&1 || rc=$?
    cat "$log"
    local p f
    p=$(grep -c '^PASS ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        fail "$name exited with status $rc"
    fi
}

cflags=(-Wall -Wextra -Werror -O2 -pthread -I"$root/include")
link=(-L"$out" -lfaio)

# ---- build -------------------------------------------------------------
if ! step "build libfaio.so (go build -buildmode=c-shared ./capi)" \
    go build -buildmode=c-shared -o "$out/libfaio.so" ./capi; then
    echo "$passed passed, $failed failed"
    exit 1
fi

# ---- the headers on their own ------------------------------------------
echo '#include "faio.h"' >"$out/header_c.c"
step "faio.h compiles alone as C99 (-pedantic)" \
    gcc -std=c99 -pedantic-errors -Wall -Wextra -Werror -I"$root/include" -fsyntax-only "$out/header_c.c"
echo '#include "faio.h"' >"$out/header_cxx.cpp"
step "faio.h compiles alone as C++" \
    g++ -std=c++11 -pedantic-errors -Wall -Wextra -Werror -I"$root/include" -fsyntax-only "$out/header_cxx.cpp"
echo '#include "faio.hpp"' >"$out/header_hpp.cpp"
step "faio.hpp compiles alone as C++20 (-pedantic)" \
    g++ -std=c++20 -pedantic-errors -Wall -Wextra -Werror -I"$root/include" -fsyntax-only "$out/header_hpp.cpp"

# ---- header / export consistency ---------------------------------------
# The functions faio.h declares: lines "type name(" outside typedefs.
sed -n -E 's/^(const )?[a-z_]+ \**(faio_[a-z0-9_]+)\(.*/\2/p' include/faio.h | sort >"$out/declared.txt"
nm -D --defined-only "$out/libfaio.so" | awk '$2 == "T" && $3 ~ /^faio_/ { print $3 }' | sort >"$out/exported.txt"
check_names() {
    [ -s "$out/declared.txt" ] || { echo "no declarations found in faio.h"; return 1; }
    diff -u "$out/declared.txt" "$out/exported.txt" &&
        echo "$(wc -l <"$out/declared.txt") functions"
}
step "nm -D: the faio_* exports of libfaio.so are exactly faio.h's functions" check_names

# A program holding a pointer to every declared function, each typed by
# faio.h's prototype, linked against the library: a missing definition
# fails the link, and at run time each must resolve into libfaio.so. (The
# definitions themselves, in capi/shim.c, are compiled against faio.h, so
# the compiler checks every signature.)
gen_abi_table() {
    {
        echo '#define _GNU_SOURCE'
        echo '#include <dlfcn.h>'
        echo '#include <stdio.h>'
        echo '#include <string.h>'
        echo '#include "faio.h"'
        echo 'struct abi {'
        while read -r f; do echo "    __typeof__($f) *$f;"; done <"$out/declared.txt"
        echo '};'
        echo 'static const struct abi abi = {'
        while read -r f; do echo "    .$f = $f,"; done <"$out/declared.txt"
        echo '};'
        echo 'struct entry { const char *name; void *addr; };'
        echo 'static const struct entry entries[] = {'
        while read -r f; do echo "    {\"$f\", (void *)abi.$f},"; done <"$out/declared.txt"
        echo '};'
        cat <<'EOF'
int main(void)
{
    int bad = 0;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        Dl_info info;
        void *sym = dlsym(RTLD_DEFAULT, entries[i].name);
        if (sym != entries[i].addr || !dladdr(sym, &info) || !strstr(info.dli_fname, "libfaio.so")) {
            printf("%s does not resolve into libfaio.so\n", entries[i].name);
            bad++;
        }
    }
    printf("%zu functions resolved\n", sizeof entries / sizeof entries[0]);
    return bad != 0;
}
EOF
    } >"$out/abi_table.c"
}
abi_table() {
    gen_abi_table &&
        gcc -std=gnu11 "${cflags[@]}" "$out/abi_table.c" "${link[@]}" -ldl -o "$out/abi_table" &&
        LD_LIBRARY_PATH=$out limit "$out/abi_table"
}
step "every faio.h function, typed by its prototype, links and resolves into libfaio.so" abi_table

# ---- tests ---------------------------------------------------------------
if step "build the C test (gcc -Wall -Werror)" \
    gcc -std=c11 "${cflags[@]}" capi/test/test_*.c "${link[@]}" -o "$out/capi_test"; then
    run_cases "C test" "$out/capi_test"
    # Again on the portable backend (no io_uring), I/O included.
    FAIO_BACKEND=portable run_cases "C test, portable backend" "$out/capi_test"
fi
if step "build the C++ test (g++ -std=c++20 -Wall -Werror)" \
    g++ -std=c++20 "${cflags[@]}" capi/test/test_cpp.cpp "${link[@]}" -o "$out/cpp_test"; then
    run_cases "C++ test" "$out/cpp_test"
    FAIO_BACKEND=portable run_cases "C++ test, portable backend" "$out/cpp_test"
fi
# Again unoptimised: g++ -O0 makes no tail call where a coroutine hands
# over to another (symmetric transfer), so faio.hpp must not rely on one.
if step "build the C++ test at -O0" \
    g++ -std=c++20 "${cflags[@]/-O2/-O0}" capi/test/test_cpp.cpp "${link[@]}" -o "$out/cpp_test_O0"; then
    run_cases "C++ test, -O0" "$out/cpp_test_O0"
fi

# ---- examples ------------------------------------------------------------
if step "build examples/c" env LIBFAIO_DIR="$out" bash examples/c/build.sh "$out"; then
    step "run examples/c on faio.h" limit "$out/faio-example-c" include/faio.h
fi
if step "build examples/cpp" env LIBFAIO_DIR="$out" bash examples/cpp/build.sh "$out"; then
    step "run examples/cpp (pipeline and loopback echo server)" limit "$out/faio-example-cpp"
fi

# ---- benchmark -----------------------------------------------------------
if step "build the C benchmark" gcc -std=c11 "${cflags[@]}" capi/test/bench.c "${link[@]}" -o "$out/bench"; then
    if [ "$bench" -eq 1 ]; then
        LD_LIBRARY_PATH=$out "$out/bench"
    fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
