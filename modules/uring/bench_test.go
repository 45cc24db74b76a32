package uring

import (
	"fmt"
	"testing"
)

// BenchmarkNop measures one nop through the ring, submit to reap, per op:
// one io_uring_enter per op with batch=1, one per 32 ops with batch=32.
func BenchmarkNop(b *testing.B) {
	for _, batch := range []int{1, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			r := newRing(b, 64, nil)
			reaped := 0
			count := func(*CQE) { reaped++ }
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(batch, b.N-done)
				for i := range n {
					s := r.GetSQE()
					s.PrepNop()
					s.SetUserData(uint64(done + i))
				}
				if _, err := r.SubmitAndWait(uint32(n)); err != nil {
					b.Fatal(err)
				}
				if got := r.ForEachCQE(count); got != n {
					b.Fatalf("reaped %d of %d", got, n)
				}
				done += n
			}
			if reaped != b.N {
				b.Fatalf("reaped %d, want %d", reaped, b.N)
			}
		})
	}
}

// BenchmarkRead4K reads 4 KiB at rotating offsets of a 1 MiB file that is in
// the page cache: through the ring one at a time, through the ring 32 per
// system call, and with os.File.ReadAt for comparison.
func BenchmarkRead4K(b *testing.B) {
	const size, fileSize = 4096, 1 << 20
	f := tempFile(b, make([]byte, fileSize))
	fd := int(f.Fd())
	offset := func(i int) uint64 { return uint64(i*size) % fileSize }

	b.Run("uring", func(b *testing.B) {
		r := newRing(b, 64, nil)
		buf := make([]byte, size)
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			s := r.GetSQE()
			s.PrepRead(fd, buf, offset(i))
			if _, err := r.SubmitAndWait(1); err != nil {
				b.Fatal(err)
			}
			c, err := r.PeekCQE()
			if err != nil || c == nil || c.Res != size {
				b.Fatalf("read: %v, %v", c, err)
			}
			r.CQESeen(c)
		}
	})
	b.Run("uring_batch32", func(b *testing.B) {
		r := newRing(b, 64, nil)
		bufs := make([][]byte, 32)
		for i := range bufs {
			bufs[i] = make([]byte, size)
		}
		short := 0
		check := func(c *CQE) {
			if c.Res != size {
				short++
			}
		}
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			n := min(32, b.N-done)
			for i := range n {
				r.GetSQE().PrepRead(fd, bufs[i], offset(done+i))
			}
			if _, err := r.SubmitAndWait(uint32(n)); err != nil {
				b.Fatal(err)
			}
			if got := r.ForEachCQE(check); got != n {
				b.Fatalf("reaped %d of %d", got, n)
			}
			done += n
		}
		if short != 0 {
			b.Fatalf("%d short reads", short)
		}
	})
	b.Run("os.File.ReadAt", func(b *testing.B) {
		buf := make([]byte, size)
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if n, err := f.ReadAt(buf, int64(offset(i))); n != size || err != nil {
				b.Fatalf("ReadAt = %d, %v", n, err)
			}
		}
	})
}
