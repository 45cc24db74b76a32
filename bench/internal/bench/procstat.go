package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// statusField reads one numeric field of /proc/self/status ("Threads",
// "VmHWM"); for sizes the value is in KiB.
func statusField(name string) (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	return parseStatusField(data, name)
}

// parseStatusField finds "name:\t<number>[ kB]" in the text of a
// /proc/<pid>/status file.
func parseStatusField(status []byte, name string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	prefix := []byte(name + ":")
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		fields := bytes.Fields(line[len(prefix):])
		if len(fields) == 0 {
			break
		}
		v, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc status field %s: %w", name, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("bench: /proc status has no field %s", name)
}

// resetPeakRSS restarts the kernel's peak-RSS count (VmHWM) from the
// current RSS, so that peakRSSMiB reports the peak of what ran since.
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMiB returns VmHWM in MiB.
func peakRSSMiB() (float64, error) {
	kib, err := statusField("VmHWM")
	if err != nil {
		return 0, err
	}
	return float64(kib) / 1024, nil
}

// threadSampler polls the process's thread count (the Threads field, which
// counts io_uring's io-wq workers too) until stopped and keeps the peak,
// with the number of io-wq workers among the threads at that moment.
type threadSampler struct {
	stop     chan struct{}
	done     sync.WaitGroup
	peak     int
	peakIOWQ int
	err      error
}

// threadSampleEvery trades resolution for the sampler's own cost: the
// thread count of a blocking-read run climbs within milliseconds and stays
// up, so a short poll does not miss it.
const threadSampleEvery = 2 * time.Millisecond

func startThreadSampler() *threadSampler {
	s := &threadSampler{stop: make(chan struct{})}
	s.sample()
	s.done.Go(func() {
		t := time.NewTicker(threadSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	})
	return s
}

func (s *threadSampler) sample() {
	n, err := statusField("Threads")
	if err != nil {
		s.err = err
		return
	}
	if int(n) > s.peak {
		// Naming the threads costs a read per thread, so it is done only
		// when the peak rises, which happens a few times per run.
		s.peak, s.peakIOWQ = int(n), countIOWQThreads()
	}
}

// Stop takes a last sample and returns the peak thread count and the
// io-wq workers among them.
func (s *threadSampler) Stop() (peak, iowq int, err error) {
	close(s.stop)
	s.done.Wait()
	s.sample()
	return s.peak, s.peakIOWQ, s.err
}

// countIOWQThreads counts the process's io_uring io-wq workers (threads
// named iou-wrk-<pid>), which the kernel starts for requests it cannot
// issue without blocking. Threads that end while being counted are skipped.
func countIOWQThreads() int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	n := 0
	for _, t := range tasks {
		comm, err := os.ReadFile("/proc/self/task/" + t.Name() + "/comm")
		if err == nil && bytes.HasPrefix(comm, []byte("iou-wrk")) {
			n++
		}
	}
	return n
}

// ProcessCPU returns the user and system CPU time this process has used so
// far (getrusage RUSAGE_SELF): that of every thread it has, or had, io_uring's
// io-wq workers included, and none of its children's.
func ProcessCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("bench: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// fileLimit returns the soft limit on open files (RLIMIT_NOFILE), which Go
// raises at start-up to just below the hard limit.
func fileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("bench: getrlimit: %w", err)
	}
	return l.Cur, nil
}

// fileLimitMargin is what a process of the program needs open besides its
// connections: standard streams, the runtime's epoll and io_uring
// descriptors, pipes to its children, the listener.
const fileLimitMargin = 64

// checkFileLimit fails if this process cannot have conns connections open
// at once.
func checkFileLimit(conns int) error {
	limit, err := fileLimit()
	if err != nil {
		return err
	}
	if need := uint64(conns + fileLimitMargin); limit < need {
		return fmt.Errorf("bench: %d connections need about %d open files, but RLIMIT_NOFILE allows %d (raise the hard limit: ulimit -Hn)", conns, need, limit)
	}
	return nil
}
