#!/bin/sh
# Builds the C example against libfaio.so:
#
#     bash examples/c/build.sh [outdir]     (outdir defaults to build/examples)
#
# It builds outdir/libfaio.so from ./capi unless LIBFAIO_DIR names a
# directory that already has one, then compiles main.c into
# outdir/faio-example-c with an rpath to the library's directory, so the
# program runs without LD_LIBRARY_PATH. By hand, from the checkout root
# after `go run mage.go build:capi` (which writes build/libfaio.so):
#
#     gcc -std=c11 -Wall -Werror -Iinclude examples/c/main.c -Lbuild -lfaio -pthread \
#         -Wl,-rpath,"$PWD/build" -o build/faio-example-c
#
# Without the -Wl,-rpath the program links but cannot find libfaio.so when
# it starts; run it as LD_LIBRARY_PATH=build build/faio-example-c then.
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
${CC:-gcc} -std=c11 -Wall -Wextra -Werror -O2 -pthread -I"$root/include" "$here/main.c" \
    -L"$lib" -lfaio -Wl,-rpath,"$lib" -o "$out/faio-example-c"
echo "built $out/faio-example-c"
