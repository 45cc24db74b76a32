// Command capi is built with -buildmode=c-shared into libfaio.so, the C ABI
// declared in include/faio.h. A c-shared library must be package main with a
// main function; the function is never called.
//
// The exported functions are being built; see the project README.
package main

func main() {}
