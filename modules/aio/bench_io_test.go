package aio

import (
	"context"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The I/O benchmarks compare faio (2 workers) with goroutines using os and
// net (GOMAXPROCS 2) on the same machine in the same run:
//
//	go test -run '^$' -bench 'RandomRead|Echo' -benchmem -count 5 > out.txt
//	benchstat -col /impl out.txt

const (
	benchFileSize = 64 << 20
	benchBlock    = 4 << 10
	benchInFlight = 64
)

// benchFile writes a benchFileSize file of random bytes for one benchmark.
func benchFile(b *testing.B) string {
	b.Helper()
	name := filepath.Join(b.TempDir(), "data")
	if err := os.WriteFile(name, randomBytes(benchFileSize, 10), 0o600); err != nil {
		b.Fatal(err)
	}
	return name
}

// readLoop does n random block-aligned 4 KiB reads with readAt.
func readLoop(n int, seed uint64, readAt func(buf []byte, off int64) (int, error)) error {
	rng := rand.New(rand.NewPCG(seed, 0))
	buf := make([]byte, benchBlock)
	for range n {
		off := int64(rng.IntN(benchFileSize/benchBlock)) * benchBlock
		if _, err := readAt(buf, off); err != nil {
			return err
		}
	}
	return nil
}

// share splits b.N operations among k workers.
func share(n, k, i int) int {
	s := n / k
	if i < n%k {
		s++
	}
	return s
}

// 4 KiB reads at random offsets of a cached 64 MiB file, 64 in flight.
func BenchmarkRandomRead4K(b *testing.B) {
	name := benchFile(b)
	b.Run("impl=faio", func(b *testing.B) {
		withProcs(b, 2)
		rt := benchRuntime(b, 2)
		b.ReportAllocs()
		_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
			f, err := Open(ctx, name)
			if err != nil {
				return 0, err
			}
			defer f.Close(ctx)
			hs := make([]*runtime.JoinHandle[int], benchInFlight)
			b.ResetTimer()
			for i := range hs {
				hs[i] = runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
					return 0, readLoop(share(b.N, benchInFlight, i), uint64(i), func(buf []byte, off int64) (int, error) {
						return f.ReadAt(ctx, buf, off)
					})
				})
			}
			err = joinAll(ctx, hs)
			b.StopTimer()
			return 0, err
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("impl=goroutines", func(b *testing.B) {
		withProcs(b, 2)
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		errs := make(chan error, benchInFlight)
		for i := range benchInFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := readLoop(share(b.N, benchInFlight, i), uint64(i), f.ReadAt); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	})
}

const echoSize = 64

// One 64-byte message and its echo over loopback TCP per operation, one
// round trip at a time on one connection.
func BenchmarkEcho64B(b *testing.B) {
	b.Run("impl=faio", func(b *testing.B) {
		withProcs(b, 2)
		rt := benchRuntime(b, 2)
		b.ReportAllocs()
		_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
			l, err := Listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			server := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				s, err := l.Accept(ctx)
				if err != nil {
					return 0, err
				}
				defer s.Close(ctx)
				buf := make([]byte, echoSize)
				for {
					if _, err := s.ReadFull(ctx, buf); err != nil {
						if err == io.EOF {
							return 0, nil
						}
						return 0, err
					}
					if _, err := s.Write(ctx, buf); err != nil {
						return 0, err
					}
				}
			})
			c, err := Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return 0, err
			}
			msg, got := make([]byte, echoSize), make([]byte, echoSize)
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(ctx, msg); err != nil {
					return 0, err
				}
				if _, err := c.ReadFull(ctx, got); err != nil {
					return 0, err
				}
			}
			b.StopTimer()
			c.Close(ctx)
			l.Close(ctx)
			return server.Join(ctx)
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("impl=goroutines", func(b *testing.B) {
		withProcs(b, 2)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		done := make(chan error, 1)
		go func() {
			s, err := l.Accept()
			if err != nil {
				done <- err
				return
			}
			defer s.Close()
			buf := make([]byte, echoSize)
			for {
				if _, err := io.ReadFull(s, buf); err != nil {
					if err == io.EOF {
						err = nil
					}
					done <- err
					return
				}
				if _, err := s.Write(buf); err != nil {
					done <- err
					return
				}
			}
		}()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		msg, got := make([]byte, echoSize), make([]byte, echoSize)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := c.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, got); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		c.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})
}

// An upload: 8 MiB per operation from a net.Conn client into a faio file,
// with io.Copy of an io.LimitReader of the NetConn in a task: spliced
// (FileIO.ReadFrom, socket -> pipe -> file) and through io.Copy's buffer
// (the FileIO and the reader hidden behind plain wrappers), into the same
// page-cache file, rewritten from its start each time.
//
//	go test -run '^$' -bench Upload -benchmem -count 5 > out.txt
//	benchstat -col /impl out.txt
func BenchmarkUpload8M(b *testing.B) {
	const size = 8 << 20
	chunk := randomBytes(1<<20, 28)
	for _, impl := range []string{"splice", "buffered"} {
		b.Run("impl="+impl, func(b *testing.B) {
			rt := benchRuntime(b, 2)
			name := filepath.Join(b.TempDir(), "up")
			_, err := runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				client, server, err := uploadPair(ctx, "tcp")
				if err != nil {
					return struct{}{}, err
				}
				stop := make(chan struct{})
				sent := goSpawner(func() error {
					defer client.Close()
					for {
						select {
						case <-stop:
							return nil
						default:
						}
						if _, err := client.Write(chunk); err != nil {
							return nil // the server closed
						}
					}
				})
				defer func() { close(stop); server.Close(ctx); sent() }()
				f, err := Create(ctx, name)
				if err != nil {
					return struct{}{}, err
				}
				defer f.Close(ctx)
				nc := server.NetConn()
				var dst io.Writer = f.IO()
				if impl == "buffered" {
					dst = struct{ io.Writer }{f.IO()}
				}
				b.SetBytes(size)
				b.ResetTimer()
				for range b.N {
					if _, err := f.Seek(ctx, 0, io.SeekStart); err != nil {
						return struct{}{}, err
					}
					var src io.Reader = io.LimitReader(nc, size)
					if impl == "buffered" {
						src = struct{ io.Reader }{src}
					}
					if m, err := io.Copy(dst, src); m != size || err != nil {
						return struct{}{}, fmt.Errorf("io.Copy = %d, %v", m, err)
					}
				}
				b.StopTimer()
				return struct{}{}, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
