package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/faio-go/faio"
)

// fileCopy copies a 32 MiB file of random bytes with faio.File through
// the rings, 16 tasks each copying its own stripe, and compares checksums.
func fileCopy(rt *faio.Runtime) (string, error) {
	const size, piece, copiers = 32 << 20, 256 << 10, 16
	dir, err := os.MkdirTemp("", "faio-demo-copy-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		return "", err
	}
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		return "", err
	}
	start := time.Now()
	_, err = faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		in, err := faio.Open(ctx, src)
		if err != nil {
			return struct{}{}, err
		}
		defer in.Close(ctx)
		out, err := faio.Create(ctx, dst)
		if err != nil {
			return struct{}{}, err
		}
		defer out.Close(ctx)
		var hs []*faio.JoinHandle[struct{}]
		for c := range copiers {
			hs = append(hs, faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				buf := make([]byte, piece)
				for off := int64(c * piece); off < size; off += copiers * piece {
					n, err := in.ReadAt(ctx, buf, off)
					if err != nil && !errors.Is(err, io.EOF) {
						return struct{}{}, err
					}
					if _, err := out.WriteAt(ctx, buf[:n], off); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			}))
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, out.Sync(ctx)
	})
	el := time.Since(start)
	if err != nil {
		return "", err
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		return "", err
	}
	if a, b := sha256.Sum256(data), sha256.Sum256(got); !bytes.Equal(a[:], b[:]) {
		return "", errors.New("the copy's SHA-256 differs from the source's")
	}
	return fmt.Sprintf("%d MiB copied by %d tasks with File.ReadAt/WriteAt in %v (%.0f MiB/s), SHA-256 matches",
		size>>20, copiers, el.Round(time.Millisecond), float64(size>>20)/el.Seconds()), nil
}

// echo runs a TCP echo server on 127.0.0.1 and 200 client tasks doing 200
// round trips of 1 KiB each; every byte that comes back is checked.
func echo(rt *faio.Runtime) (string, error) {
	const clients, trips, size = 200, 200, 1024
	start := time.Now()
	_, err := faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		ln, err := faio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		srvCtx, stop := context.WithCancel(ctx)
		defer stop()
		faio.Spawn(srvCtx, func(ctx context.Context) (struct{}, error) {
			defer ln.Close(context.Background())
			for {
				conn, err := ln.Accept(ctx)
				if err != nil {
					return struct{}{}, nil // cancelled: the demo is over
				}
				faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					defer conn.Close(context.Background())
					buf := make([]byte, size)
					for {
						n, err := conn.Read(ctx, buf)
						if err != nil {
							return struct{}{}, nil // EOF or cancelled
						}
						if _, err := conn.Write(ctx, buf[:n]); err != nil {
							return struct{}{}, nil
						}
					}
				})
			}
		})
		addr := ln.Addr().String()
		var hs []*faio.JoinHandle[struct{}]
		for c := range clients {
			hs = append(hs, faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				conn, err := faio.Dial(ctx, "tcp", addr)
				if err != nil {
					return struct{}{}, err
				}
				defer conn.Close(ctx)
				out, in := make([]byte, size), make([]byte, size)
				for trip := range trips {
					for i := range out {
						out[i] = byte(c + trip + i)
					}
					if _, err := conn.Write(ctx, out); err != nil {
						return struct{}{}, err
					}
					if _, err := conn.ReadFull(ctx, in); err != nil {
						return struct{}{}, err
					}
					if !bytes.Equal(in, out) {
						return struct{}{}, fmt.Errorf("client %d: echo differs on trip %d", c, trip)
					}
				}
				return struct{}{}, nil
			}))
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return struct{}{}, err
			}
		}
		stop()
		return struct{}{}, nil
	})
	el := time.Since(start)
	if err != nil {
		return "", err
	}
	n := clients * trips
	return fmt.Sprintf("%d clients x %d round trips of %d B through one faio echo server in %v (%.1f us/round trip), every byte checked",
		clients, trips, size, el.Round(time.Millisecond), float64(el.Microseconds())/float64(n)), nil
}

// pipeline sends 400,000 numbers from 4 producer tasks through one channel
// of capacity 64 to 4 consumer tasks that count them in a map guarded by a
// faio Mutex; the counts and the sum must come out exact.
func pipeline(rt *faio.Runtime) (string, error) {
	const producers, consumers, per = 4, 4, 100000
	var mu faio.Mutex
	seen := make(map[int]int)
	var sum int64
	start := time.Now()
	_, err := faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		tx, rx := faio.NewChannel[int](64)
		for p := range producers {
			tx := tx.Clone()
			faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				defer tx.Close()
				for i := range per {
					if err := tx.Send(ctx, p*per+i); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
		}
		tx.Close() // the clones keep the channel open until the producers finish
		for range consumers {
			rx := rx.Clone()
			faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				defer rx.Close()
				for v := range rx.All(ctx) {
					if err := mu.Lock(ctx); err != nil {
						return struct{}{}, err
					}
					seen[v%1000]++
					sum += int64(v)
					mu.Unlock()
				}
				return struct{}{}, ctx.Err()
			})
		}
		rx.Close()
		return struct{}{}, nil
	})
	el := time.Since(start)
	if err != nil {
		return "", err
	}
	const n = producers * per
	if want := int64(n) * (n - 1) / 2; sum != want {
		return "", fmt.Errorf("sum of received values %d, want %d", sum, want)
	}
	for k, c := range seen {
		if c != n/1000 {
			return "", fmt.Errorf("bucket %d counted %d times, want %d", k, c, n/1000)
		}
	}
	return fmt.Sprintf("%d values from %d producers to %d consumers over one channel, into a mutex-guarded map, in %v (%.0f ns/value), counts exact",
		n, producers, consumers, el.Round(time.Millisecond), float64(el.Nanoseconds())/n), nil
}
