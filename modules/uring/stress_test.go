package uring

import (
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestStressNopsAndReads pushes 100,000 nops and 8-byte reads through a
// 64-entry ring in batches of random size, reaping with every method in
// random turns. Every user data must come back exactly once, and every read
// must return the bytes at its offset. The SQPOLL variant has a kernel
// thread consuming the SQ concurrently, which exercises the memory ordering
// on the SQ head and tail for real.
func TestStressNopsAndReads(t *testing.T) {
	needRing(t)
	for _, tt := range []struct {
		name string
		p    Params
	}{
		{"plain", Params{}},
		{"sqpoll", Params{Flags: SetupSQPoll, SQThreadIdle: 50}},
		{"coop_taskrun", Params{Flags: SetupCoopTaskrun | SetupTaskrunFlag}},
	} {
		t.Run(tt.name, func(t *testing.T) { stressNopsAndReads(t, &tt.p) })
	}
}

func stressNopsAndReads(t *testing.T, p *Params) {
	const (
		total    = 100_000
		fileSize = 1 << 16
		slots    = 256 // read buffers; more than the CQ holds, so the backlog path runs too
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>32))

	content := make([]byte, fileSize)
	for i := range content {
		content[i] = byte(i*7 + i>>8)
	}
	f := tempFile(t, content)
	fd := int(f.Fd())
	r := newRing(t, 64, p)

	type read struct {
		slot int
		off  int
	}
	bufs := make([][8]byte, slots)
	free := make([]int, slots)
	for i := range free {
		free[i] = i
	}
	reads := make(map[uint64]read)
	seen := make([]uint8, total)
	reaped, next, readsDone := 0, 0, 0

	check := func(c *CQE) {
		ud := c.UserData
		if ud >= total || seen[ud] != 0 {
			t.Fatalf("user data %d delivered again or out of range", ud)
		}
		seen[ud]++
		reaped++
		rd, isRead := reads[ud]
		if !isRead {
			if c.Res != 0 {
				t.Fatalf("nop %d: res %d", ud, c.Res)
			}
			return
		}
		delete(reads, ud)
		readsDone++
		if c.Res != 8 || string(bufs[rd.slot][:]) != string(content[rd.off:rd.off+8]) {
			t.Fatalf("read %d at %d: res %d, %x want %x", ud, rd.off, c.Res, bufs[rd.slot], content[rd.off:rd.off+8])
		}
		free = append(free, rd.slot)
	}

	batch := make([]*CQE, 16)
	for reaped < total {
		// Queue a batch of random size.
		for n := rng.IntN(64) + 1; n > 0 && next < total; n-- {
			s := r.GetSQE()
			if s == nil {
				break
			}
			if rng.IntN(2) == 0 || len(free) == 0 {
				s.PrepNop()
			} else {
				slot := free[len(free)-1]
				free = free[:len(free)-1]
				off := rng.IntN(fileSize - 8)
				s.PrepRead(fd, bufs[slot][:], uint64(off))
				reads[uint64(next)] = read{slot, off}
			}
			s.SetUserData(uint64(next))
			next++
		}
		inflight := next - reaped
		if inflight == 0 {
			continue
		}
		if _, err := r.SubmitAndWait(uint32(rng.IntN(min(inflight, 8)) + 1)); err != nil {
			t.Fatalf("SubmitAndWait: %v", err)
		}
		// Reap some or all of what is ready, in one of four ways.
		switch rng.IntN(4) {
		case 0:
			r.ForEachCQE(check)
		case 1:
			n := r.PeekBatch(batch[:rng.IntN(len(batch))+1])
			for _, c := range batch[:n] {
				check(c)
			}
			r.CQAdvance(uint32(n))
		case 2:
			for range rng.IntN(8) + 1 {
				c, err := r.PeekCQE()
				if err != nil {
					t.Fatal(err)
				}
				if c == nil {
					break
				}
				check(c)
				r.CQESeen(c)
			}
		case 3:
			c, err := r.WaitCQE(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			check(c)
			r.CQESeen(c)
		}
	}
	for ud, n := range seen {
		if n != 1 {
			t.Fatalf("user data %d seen %d times", ud, n)
		}
	}
	if r.Overflow() != 0 {
		t.Errorf("kernel dropped %d completions", r.Overflow())
	}
	if readsDone < total/4 {
		t.Errorf("only %d of %d operations were reads", readsDone, total)
	}
	t.Logf("%d reads, %d nops, %d backlog flushes", readsDone, total-readsDone, r.Backlogs())
}

// TestRingModel drives a tiny ring (SQ 4, CQ 4) with random sequences of
// GetSQE, Submit and the reaping methods, against a model of two FIFO
// queues: entries taken but not submitted, and completions not yet reaped.
// Nops complete in submission order, through the kernel's overflow backlog
// too, so every reaped CQE must be the model's oldest completion.
func TestRingModel(t *testing.T) {
	needRing(t)
	rapid.Check(t, func(t *rapid.T) {
		r, err := New(4, &Params{CQEntries: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var prepared, completed []uint64
		next := uint64(0)
		reapOne := func(c *CQE) {
			if len(completed) == 0 || c.UserData != completed[0] {
				t.Fatalf("reaped %d, model expects %v", c.UserData, completed)
			}
			completed = completed[1:]
		}
		t.Repeat(map[string]func(*rapid.T){
			"GetSQE": func(t *rapid.T) {
				s := r.GetSQE()
				if full := len(prepared) == 4; (s == nil) != full {
					t.Fatalf("GetSQE nil=%v with %d prepared", s == nil, len(prepared))
				}
				if s != nil {
					s.PrepNop()
					s.SetUserData(next)
					prepared = append(prepared, next)
					next++
				}
			},
			"Submit": func(t *rapid.T) {
				n, err := r.Submit()
				if err != nil || n != len(prepared) {
					t.Fatalf("Submit = %d, %v; model has %d prepared", n, err, len(prepared))
				}
				completed = append(completed, prepared...)
				prepared = prepared[:0]
			},
			"PeekCQE": func(t *rapid.T) {
				c, err := r.PeekCQE()
				if err != nil || (c == nil) != (len(completed) == 0) {
					t.Fatalf("PeekCQE = %v, %v with %d completed", c, err, len(completed))
				}
				if c != nil {
					reapOne(c)
					r.CQESeen(c)
				}
			},
			"ForEachCQE": func(t *rapid.T) {
				r.ForEachCQE(reapOne)
			},
			"PeekBatch": func(t *rapid.T) {
				batch := make([]*CQE, rapid.IntRange(1, 6).Draw(t, "batch"))
				n := r.PeekBatch(batch)
				if len(completed) > 0 && n == 0 {
					t.Fatalf("PeekBatch found nothing with %d completed", len(completed))
				}
				for _, c := range batch[:n] {
					reapOne(c)
				}
				r.CQAdvance(uint32(n))
			},
			"WaitCQE": func(t *rapid.T) {
				if len(completed)+len(prepared) == 0 {
					return // would only time out
				}
				c, err := r.WaitCQE(time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if len(completed) == 0 {
					// Nothing was ready, so WaitCQE entered the kernel and
					// submitted on the way.
					completed = append(completed, prepared...)
					prepared = prepared[:0]
				}
				reapOne(c)
				r.CQESeen(c)
			},
			"": func(t *rapid.T) {
				if r.SQReady() != uint32(len(prepared)) {
					t.Fatalf("SQReady %d, model %d", r.SQReady(), len(prepared))
				}
				if r.CQReady() > uint32(len(completed)) || r.CQReady() > r.CQEntries() {
					t.Fatalf("CQReady %d, model %d", r.CQReady(), len(completed))
				}
			},
		})
	})
}
