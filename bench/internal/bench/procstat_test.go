package bench

import (
	"testing"
	"time"
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
