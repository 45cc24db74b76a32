package bench

import (
	"errors"
	"fmt"
	"time"
)

// Sizes holds every count of the workloads. FullSizes are the sizes of
// WORKLOADS.md; QuickSizes scale the work down by ten for smoke runs. A child
// process gets the parent's Sizes as JSON (the internal -sizes flag), so the
// tests can drive the child processes at sizes of their own.
type Sizes struct {
	Spawns int `json:"spawns"` // W1: tasks spawned

	PingPongs int `json:"ping_pongs"` // W2: round trips

	MutexTasks int `json:"mutex_tasks"` // W3: tasks sharing the mutex
	MutexIters int `json:"mutex_iters"` // W3: lock/unlock pairs per task

	Producers        int `json:"producers"`          // W4
	Consumers        int `json:"consumers"`          // W4
	ItemsPerProducer int `json:"items_per_producer"` // W4
	ChanCap          int `json:"chan_cap"`           // W4: channel capacity

	Timers   int           `json:"timers"`    // W5: sleeping tasks
	MinSleep time.Duration `json:"min_sleep"` // W5: shortest sleep
	MaxSleep time.Duration `json:"max_sleep"` // W5: longest sleep

	Sleepers    int           `json:"sleepers"`     // W5b: tasks asleep until one deadline
	SleepMargin time.Duration `json:"sleep_margin"` // W5b: the deadline, from the start

	FileSize    int64 `json:"file_size"`    // W6, W6d: bytes in the data file
	BlockSize   int   `json:"block_size"`   // W6, W6d: bytes per read
	Reads       int   `json:"reads"`        // W6: page-cache reads
	DirectReads int   `json:"direct_reads"` // W6d: O_DIRECT reads
	InFlight    int   `json:"in_flight"`    // W6, W6d: reads in flight

	Conns   int `json:"conns"`    // W7: client connections
	Trips   int `json:"trips"`    // W7: timed round trips per connection
	MsgSize int `json:"msg_size"` // W7, W7c: bytes per message

	ManyConns int `json:"many_conns"` // W7c: client connections
	ManyTrips int `json:"many_trips"` // W7c: timed round trips per connection

	YieldTasks int `json:"yield_tasks"` // W8: yielding tasks
	Yields     int `json:"yields"`      // W8: yields per task

	HTTPConns    int           `json:"http_conns"`    // W9: keep-alive connections
	HTTPRequests int           `json:"http_requests"` // W9, own client: timed requests per connection
	HTTPDuration time.Duration `json:"http_duration"` // W9, wrk: the length of the run (whole seconds)
}

// FullSizes returns the sizes WORKLOADS.md specifies.
func FullSizes() Sizes {
	return Sizes{
		Spawns:           1_000_000,
		PingPongs:        1_000_000,
		MutexTasks:       1_000,
		MutexIters:       1_000,
		Producers:        4,
		Consumers:        4,
		ItemsPerProducer: 1_000_000,
		ChanCap:          1_024,
		Timers:           100_000,
		MinSleep:         time.Millisecond,
		MaxSleep:         100 * time.Millisecond,
		Sleepers:         1_000_000,
		SleepMargin:      15 * time.Second,
		FileSize:         1 << 30,
		BlockSize:        4 << 10,
		Reads:            1_000_000,
		DirectReads:      200_000,
		InFlight:         64,
		Conns:            64,
		Trips:            20_000,
		MsgSize:          64,
		ManyConns:        1_000,
		ManyTrips:        1_280,
		YieldTasks:       1_000,
		Yields:           1_000,
		HTTPConns:        64,
		HTTPRequests:     5_000,
		HTTPDuration:     10 * time.Second,
	}
}

// QuickSizes returns a tenth of the work of FullSizes, with the same
// concurrency (tasks, connections, reads in flight, sleep range), a 64 MiB
// data file and a 1 s W9 run. W7c is the exception: it keeps its round
// trips per connection and has a tenth of the connections, so that a quick
// run does not open a thousand.
func QuickSizes() Sizes {
	s := FullSizes()
	s.Spawns /= 10
	s.PingPongs /= 10
	s.MutexIters /= 10
	s.ItemsPerProducer /= 10
	s.Timers /= 10
	s.Sleepers /= 10
	s.SleepMargin /= 10
	s.FileSize = 64 << 20
	s.Reads /= 10
	s.DirectReads /= 10
	s.Trips /= 10
	s.ManyConns /= 10
	s.Yields /= 10
	s.HTTPRequests /= 10
	s.HTTPDuration /= 10
	return s
}

// manyConns returns s with W7c's connections and round trips in place of
// W7's: W7c is W7 with more connections.
func (s Sizes) manyConns() Sizes {
	s.Conns, s.Trips = s.ManyConns, s.ManyTrips
	return s
}

// minMsgSize leaves room for the connection and trip numbers the W7 client
// stamps on every message.
const minMsgSize = 16

// directAlign is the alignment O_DIRECT needs for buffers, offsets and
// lengths on the file systems it supports (the logical block size is at most
// 4 KiB on the devices this targets).
const directAlign = 4096

// ErrSizes is wrapped by the error Validate returns.
var ErrSizes = errors.New("bench: invalid sizes")

// Validate reports every field that no workload could run with.
func (s Sizes) Validate() error {
	var errs []error
	positive := func(name string, v int64) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%w: %s must be positive, got %d", ErrSizes, name, v))
		}
	}
	positive("spawns", int64(s.Spawns))
	positive("ping_pongs", int64(s.PingPongs))
	positive("mutex_tasks", int64(s.MutexTasks))
	positive("mutex_iters", int64(s.MutexIters))
	positive("producers", int64(s.Producers))
	positive("consumers", int64(s.Consumers))
	positive("items_per_producer", int64(s.ItemsPerProducer))
	positive("chan_cap", int64(s.ChanCap))
	positive("timers", int64(s.Timers))
	positive("min_sleep", int64(s.MinSleep))
	positive("sleepers", int64(s.Sleepers))
	positive("sleep_margin", int64(s.SleepMargin))
	positive("file_size", s.FileSize)
	positive("reads", int64(s.Reads))
	positive("direct_reads", int64(s.DirectReads))
	positive("in_flight", int64(s.InFlight))
	positive("conns", int64(s.Conns))
	positive("trips", int64(s.Trips))
	positive("many_conns", int64(s.ManyConns))
	positive("many_trips", int64(s.ManyTrips))
	positive("yield_tasks", int64(s.YieldTasks))
	positive("yields", int64(s.Yields))
	positive("http_conns", int64(s.HTTPConns))
	positive("http_requests", int64(s.HTTPRequests))
	if s.HTTPDuration < time.Second || s.HTTPDuration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("%w: http_duration must be a whole number of seconds (wrk's -d), at least 1s, got %v", ErrSizes, s.HTTPDuration))
	}
	if s.MaxSleep < s.MinSleep {
		errs = append(errs, fmt.Errorf("%w: max_sleep %v is below min_sleep %v", ErrSizes, s.MaxSleep, s.MinSleep))
	}
	if s.BlockSize <= 0 || s.BlockSize%directAlign != 0 {
		errs = append(errs, fmt.Errorf("%w: block_size must be a positive multiple of %d, got %d", ErrSizes, directAlign, s.BlockSize))
	} else if s.FileSize%int64(s.BlockSize) != 0 {
		errs = append(errs, fmt.Errorf("%w: file_size %d is not a multiple of block_size %d", ErrSizes, s.FileSize, s.BlockSize))
	}
	if s.MsgSize < minMsgSize {
		errs = append(errs, fmt.Errorf("%w: msg_size must be at least %d, got %d", ErrSizes, minMsgSize, s.MsgSize))
	}
	return errors.Join(errs...)
}
