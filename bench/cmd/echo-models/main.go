// Command echo-models compares server models for W7's echo (see
// bench/WORKLOADS.md) at the level of raw system calls, without faio's
// runtime: minimal TCP echo servers on io_uring (through the project's own
// binding, modules/uring), on epoll and on Go's net package, each measuring
// its own CPU time per round trip under the W7 client that faio-bench uses
// (64 connections, 64-byte messages, 20,000 timed round trips each). A
// variant's figure is about the least a server of its model costs, whatever
// runtime it has: set against faio-bench's W7 figures, the numbers tell what
// faio's runtime costs from what the kernel path costs.
//
// Run every variant three times, alternating, and print a JSON line per run
// and a table of the medians:
//
//	go run ./bench/cmd/echo-models -rounds 3
//	go run ./bench/cmd/echo-models -variant single,single-coop,gonet2 -trips 2000
//
// Each run is one server, in this process, against one client process (this
// program again, with the internal -client flag; the client is
// bench/internal/bench's RunClient). The client checks every echoed byte and
// times every round trip; it says "ready" on its stdout when its connections
// are open and warmed up, waits for "go" on its stdin, and says "done" when
// its timed part is over. The server takes its process's CPU time (user and
// system, getrusage RUSAGE_SELF, every thread) at the two lines, and checks
// the connections it served and the bytes it echoed. server_cpu_us is that
// CPU time per round trip; enters_per_rt, for the io_uring and epoll
// variants, is the io_uring_enter or epoll_wait calls per round trip. The
// machine should be otherwise idle: the client runs on the same machine, and
// the server's CPU time depends on how often it finds nothing to do.
//
// The variants are listed, each with what it does, in variants.go. Flags:
// -variant, -trips, -rounds, -json-only, -timeout; see -h. The exit code is
// 1 if a run failed, 2 for a bad command line.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/faio-go/faio/bench/internal/bench"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the parsed command line.
type options struct {
	variants []*variant
	trips    int
	rounds   int
	jsonOnly bool
	timeout  time.Duration
	client   string // -client ADDR: be the W7 client of the server at ADDR
}

// errFlag is the error of a command line the flag package rejected (and
// explained on its output already).
var errFlag = errors.New("bad flag")

// parseArgs parses the command line (without the program name), writing
// usage and flag errors to output. Every error but flag.ErrHelp is a bad
// command line.
func parseArgs(args []string, output io.Writer) (options, error) {
	fs := flag.NewFlagSet("echo-models", flag.ContinueOnError)
	fs.SetOutput(output)
	var o options
	list := fs.String("variant", "all", "comma-separated variants to run, or all: "+strings.Join(variantNames(), ","))
	fs.IntVar(&o.trips, "trips", bench.FullSizes().Trips, "timed round trips per connection (W7's)")
	fs.IntVar(&o.rounds, "rounds", 1, "run the variant list this many times, alternating")
	fs.BoolVar(&o.jsonOnly, "json-only", false, "print the JSON lines only, no table of medians")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "time limit of one run")
	fs.StringVar(&o.client, "client", "", "internal: run as the W7 client of the echo server at this address")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, err
		}
		return options{}, errFlag
	}
	switch {
	case fs.NArg() > 0:
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.trips < 1:
		return options{}, fmt.Errorf("-trips must be at least 1, got %d", o.trips)
	case o.rounds < 1:
		return options{}, fmt.Errorf("-rounds must be at least 1, got %d", o.rounds)
	case o.timeout <= 0:
		return options{}, fmt.Errorf("-timeout must be positive, got %v", o.timeout)
	}
	var err error
	if o.variants, err = parseVariants(*list); err != nil {
		return options{}, fmt.Errorf("-variant: %w", err)
	}
	return o, nil
}

// parseVariants resolves a -variant list.
func parseVariants(list string) ([]*variant, error) {
	if strings.TrimSpace(list) == "all" {
		vs := make([]*variant, len(variants))
		for i := range variants {
			vs[i] = &variants[i]
		}
		return vs, nil
	}
	var vs []*variant
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		v := lookupVariant(name)
		if v == nil {
			return nil, fmt.Errorf("unknown variant %q (have all, %s)", name, strings.Join(variantNames(), ", "))
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// run is the program: it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		if !errors.Is(err, errFlag) {
			fmt.Fprintf(stderr, "echo-models: %v\n", err)
		}
		return 2
	}
	if o.client != "" {
		if err := clientMain(o, stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "echo-models client: %v\n", err)
			return 1
		}
		return 0
	}
	var results []result
	code := 0
	for round := 1; round <= o.rounds; round++ {
		for _, v := range o.variants {
			runtime.GC() // start each run with a freshly collected heap
			r, err := measure(v, o.trips, o.timeout)
			if err != nil {
				fmt.Fprintf(stderr, "echo-models: %s (round %d): %v\n", v.name, round, err)
				code = 1
				continue
			}
			line, err := json.Marshal(r)
			if err != nil {
				fmt.Fprintf(stderr, "echo-models: %s (round %d): %v\n", v.name, round, err)
				code = 1
				continue
			}
			results = append(results, r)
			fmt.Fprintf(stdout, "%s\n", line)
		}
	}
	if !o.jsonOnly && len(results) > 0 {
		fmt.Fprintf(stdout, "\n%s", renderTable(results))
	}
	return code
}

// clientMain is the client process: bench.RunClientProcess with W7's
// sizes and o.trips round trips per connection.
func clientMain(o options, stdin io.Reader, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	return bench.RunClientProcess(ctx, o.client, w7Sizes(o.trips), stdin, stdout)
}
