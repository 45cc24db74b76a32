#!/bin/sh
# Builds the C++ example against libfaio.so:
#
#     bash examples/cpp/build.sh [outdir]     (outdir defaults to build/examples)
#
# It builds outdir/libfaio.so from ./capi unless LIBFAIO_DIR names a
# directory that already has one, then compiles main.cpp into
# outdir/faio-example-cpp with an rpath to the library's directory, so the
# program runs without LD_LIBRARY_PATH. By hand, from the checkout root
# after `go run mage.go build:capi` (which writes build/libfaio.so):
#
#     g++ -std=c++20 -Wall -Werror -Iinclude examples/cpp/main.cpp -Lbuild -lfaio -pthread \
#         -Wl,-rpath,"$PWD/build" -o build/faio-example-cpp
#
# Without the -Wl,-rpath the program links but cannot find libfaio.so when
# it starts; run it as LD_LIBRARY_PATH=build build/faio-example-cpp then.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/examples}
mkdir -p "$out"
out=$(cd "$out" && pwd)
lib=${LIBFAIO_DIR:-}
if [ -z "$lib" ] || [ ! -f "$lib/libfaio.so" ]; then
    (cd "$root" && go build -buildmode=c-shared -o "$out/libfaio.so" ./capi)
    lib=$out
fi
lib=$(cd "$lib" && pwd)
${CXX:-g++} -std=c++20 -Wall -Wextra -Werror -O2 -pthread -I"$root/include" "$here/main.cpp" \
    -L"$lib" -lfaio -Wl,-rpath,"$lib" -o "$out/faio-example-cpp"
echo "built $out/faio-example-cpp"
