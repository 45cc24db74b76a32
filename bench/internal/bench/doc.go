// Package bench runs the workloads of faio-go's benchmark suite (W1 ... W10,
// W5b, W6d and W7c, specified in bench/WORKLOADS.md) twice in one process, once on
// faio and once on plain goroutines with the standard library, and reports
// both side by side: the ratio of the two, taken in the same run on the
// same machine, is the number to read. W9, an HTTP/1.1 server, has four
// implementations, two on each side: faiohttp and net/http over faio's
// listener, net/http and fasthttp; its ratio is faiohttp over net/http. It is internal to the faio-bench
// program (bench/cmd/faio-bench), its only user.
//
// # Parts
//
// Each workload (w1_spawn.go ... w8_yield.go) has a faio implementation and
// a goroutine implementation written the way a Go programmer would without
// faio (sync.WaitGroup, sync.Mutex, Go channels, time.Sleep, os.File.ReadAt,
// net). Both validate what they did (every task ran, counters and sums are
// exact, every read matches the data file, every echoed byte is the one
// sent) and return a Measurement or an error wrapping ErrValidation.
//
// A Runner runs the selected workloads for each worker count and
// implementation: with a freshly collected heap, the goroutine side with
// GOMAXPROCS equal to its worker count, and a fresh faio runtime with that
// many workers for the faio side. Each successful run becomes a Result,
// printed at once as one JSON line (Result.JSONLine); RenderTable turns the
// Outcomes into the Markdown table with the targets of WORKLOADS.md, judged
// only at the full sizes (a -quick run's table says it is not judged,
// RenderUnjudgedTable). Main is the whole program behind cmd/faio-bench,
// flags (ParseArgs) included.
//
// # Processes
//
// Three workloads run partly in other processes of the same program,
// started by SelfCommand with internal flags. The W7 and W7c echo client
// (-client, RunClient) is a separate process for both servers, so the load
// never shares a scheduler with the server it measures, and this process's
// CPU time during the client's timed part is the server's; so is W9's own
// HTTP client (-http-load, RunHTTPClient), or wrk when it is installed
// (runWrk, parseWrk). W6d (-child) runs
// each configuration in a fresh process, because its result includes the
// peak number of OS threads, and Go keeps every thread it ever started.
// Main sets FAIO_BACKEND to -backend before anything starts, so the faio
// runtimes of these processes, as those of this one, run on the backend
// the command line chose; each faio Result records the one it ran on.
//
// # The data file
//
// W6 and W6d read a file whose every 8-byte word is a function of its
// offset, so any read can be checked without a copy of the file. It is
// written once (DefaultDataFile, or -file) and reused by later runs; a file
// at that path that is not one of ours is never overwritten (ErrForeignFile).
package bench
