package uring

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Which batches enter may submit with a raw system call: only bounded,
// non-sleeping entries, at most rawLenMax bytes each; one heavy entry
// anywhere in the batch sends the whole batch through the scheduler.
func TestLightBatch(t *testing.T) {
	small := make([]byte, rawLenMax)
	large := make([]byte, rawLenMax+1)
	path := []byte("/nonexistent\x00")
	var addr RawSockaddrAny
	var addrLen uint32
	var ts unix.Timespec
	iov := []unix.Iovec{{Base: &small[0]}}
	iov[0].SetLen(len(small))
	cases := []struct {
		name  string
		prep  func(*SQE)
		light bool
	}{
		{"nop", func(s *SQE) { s.PrepNop() }, true},
		{"read 64 KiB", func(s *SQE) { s.PrepRead(0, small, 0) }, true},
		{"read 64 KiB + 1", func(s *SQE) { s.PrepRead(0, large, 0) }, false},
		{"send 64 KiB", func(s *SQE) { s.PrepSend(0, small, 0) }, true},
		{"send 64 KiB + 1", func(s *SQE) { s.PrepSend(0, large, 0) }, false},
		{"recv 64 KiB", func(s *SQE) { s.PrepRecv(0, small, 0) }, true},
		{"readv", func(s *SQE) { s.PrepReadv(0, iov, 0) }, false},
		{"accept", func(s *SQE) { s.PrepAccept(0, &addr, &addrLen, 0) }, true},
		{"timeout", func(s *SQE) { s.PrepTimeout(&ts, 0, 0) }, true},
		{"openat", func(s *SQE) { s.PrepOpenat(unix.AT_FDCWD, &path[0], unix.O_RDONLY, 0) }, false},
		{"close", func(s *SQE) { s.PrepClose(0) }, false},
		{"connect", func(s *SQE) { s.PrepConnect(0, &addr, 0) }, false},
		{"close, async", func(s *SQE) { s.PrepClose(0); s.SetFlags(SQEAsync) }, true},
		{"read 64 KiB + 1, async", func(s *SQE) { s.PrepRead(0, large, 0); s.SetFlags(SQEAsync) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := New(64, nil)
			if err != nil {
				t.Skip(err)
			}
			defer r.Close()
			// The entry alone, then behind and ahead of light entries, in
			// a batch that wraps round the SQ.
			for round := range 3 {
				for range 20 * round {
					r.GetSQE().PrepNop()
				}
				c.prep(r.GetSQE())
				for range 5 {
					r.GetSQE().PrepNop()
				}
				n := r.SQReady()
				if got := r.lightBatch(n); got != c.light {
					t.Fatalf("round %d: lightBatch(%d) = %v, want %v", round, n, got, c.light)
				}
				if !r.lightBatch(uint32(20 * round)) {
					t.Fatalf("round %d: the nops ahead of the entry are not light", round)
				}
				// Consume the batch as nops so that the next round starts
				// further round the ring.
				for i := range n {
					r.sq.sqes[(r.sq.tail-n+i)&r.sq.mask] = SQE{}
				}
				if _, err := r.SubmitAndWait(n); err != nil {
					t.Fatal(err)
				}
				r.ForEachCQE(func(*CQE) {})
			}
		})
	}
}
