package bench

import (
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseStatusField(t *testing.T) {
	status := []byte("Name:\tfaio-bench\nVmHWM:\t   51234 kB\nThreads:\t7\nBad:\tx\n")
	if v, err := parseStatusField(status, "Threads"); err != nil || v != 7 {
		t.Errorf("Threads: %d, %v", v, err)
	}
	if v, err := parseStatusField(status, "VmHWM"); err != nil || v != 51234 {
		t.Errorf("VmHWM: %d, %v", v, err)
	}
	if _, err := parseStatusField(status, "Bad"); err == nil {
		t.Error("a non-number parsed")
	}
	if _, err := parseStatusField(status, "Thread"); err == nil {
		t.Error("a field prefix matched")
	}
}

func TestThreadSampler(t *testing.T) {
	s := startThreadSampler()
	time.Sleep(3 * threadSampleEvery)
	peak, iowq, err := s.Stop()
	if err != nil || peak < 1 || iowq < 0 || iowq > peak {
		t.Errorf("peak %d, io-wq %d, %v", peak, iowq, err)
	}
}

// The peak RSS follows a large allocation that is touched.
func TestPeakRSS(t *testing.T) {
	if err := resetPeakRSS(); err != nil {
		t.Skipf("cannot reset the peak RSS here: %v", err)
	}
	before, err := peakRSSMiB()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64<<20)
	for i := range b {
		if i%4096 == 0 {
			b[i] = 1
		}
	}
	after, err := peakRSSMiB()
	if err != nil {
		t.Fatal(err)
	}
	if after < before+60 {
		t.Errorf("peak RSS %v MiB after touching 64 MiB, %v before", after, before)
	}
	_ = b[len(b)-1]
}

// The process's CPU time grows with work done on any thread.
func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU()
	if err != nil {
		t.Fatal(err)
	}
	// Spin until this thread has used 50ms of CPU by its own clock
	// (CLOCK_THREAD_CPUTIME_ID), however long a loaded machine makes
	// that take; the process's total must have grown by at least as much.
	var spun time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		var ts0, ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts0); err != nil {
			return
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
				return
			}
			if spun = time.Duration(ts.Nano() - ts0.Nano()); spun >= 50*time.Millisecond {
				return
			}
		}
	}()
	<-done
	after, err := ProcessCPU()
	if err != nil {
		t.Fatal(err)
	}
	if spun < 50*time.Millisecond {
		t.Fatalf("the spinning thread got only %v of CPU in 30s", spun)
	}
	if d := after - before; d < spun-5*time.Millisecond {
		t.Errorf("process CPU time grew by %v while one thread used %v", d, spun)
	}
}

// The file limit is what Go set at start-up, and a connection count beyond
// it is refused before any connection is opened.
func TestCheckFileLimit(t *testing.T) {
	limit, err := fileLimit()
	if err != nil || limit <= fileLimitMargin {
		t.Fatalf("RLIMIT_NOFILE %d, %v", limit, err)
	}
	if n := int(limit) - fileLimitMargin; checkFileLimit(n) != nil {
		t.Errorf("%d connections: %v", n, checkFileLimit(n))
	}
	if err := checkFileLimit(int(limit)); err == nil || !strings.Contains(err.Error(), "RLIMIT_NOFILE") {
		t.Errorf("%d connections: %v", limit, err)
	}
}
