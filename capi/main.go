package main

// main is required of a c-shared build and never called: the library's
// entry points are the functions of faio.h.
func main() {}
