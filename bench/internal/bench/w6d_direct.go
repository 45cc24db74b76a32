package bench

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// W6d: as W6, but the file is opened with O_DIRECT, so every read goes to
// the device, with DirectReads reads and buffers aligned to 4096 bytes. The
// run also reports the peak number of OS threads of the process: blocking
// reads need a thread each, io_uring does not. Since Go never ends the
// threads it started, a count taken after other workloads would include
// theirs: each W6d run therefore happens in a fresh child process (see
// runIsolated) unless Env.InProcess says this is that child.

func setupDirectRead(env *Env) error {
	if _, err := ensureDataFile(env.File, env.Sizes.FileSize, false, env.Log); err != nil {
		return err
	}
	return probeDirect(env.File, env.Sizes.BlockSize)
}

// probeDirect opens path with O_DIRECT and reads its first block; a file
// system without O_DIRECT makes it return a SkipError.
func probeDirect(path string, block int) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return directSkip(path, "opening", err)
	}
	defer f.Close()
	buf := alignedBuffer(block)
	n, err := f.ReadAt(buf, 0)
	if err != nil {
		return directSkip(path, "reading", err)
	}
	return checkRead(buf, n, 0, 0)
}

// directSkip turns the errors by which a file system refuses O_DIRECT
// (EINVAL on open or on an aligned read: tmpfs before Linux 6.6, some FUSE
// and network file systems; EOPNOTSUPP) into a SkipError; other errors are
// real failures and pass through.
func directSkip(path, doing string, err error) error {
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) {
		return &SkipError{Reason: fmt.Sprintf("the file system of %s does not support O_DIRECT (%s it: %v)", path, doing, err)}
	}
	return err
}

// alignedBuffer returns a size-byte slice whose start is aligned to
// directAlign, cut from a larger allocation (Go's heap does not move
// objects, so the alignment holds for the slice's life).
func alignedBuffer(size int) []byte {
	b := make([]byte, size+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directAlign)) % directAlign
	return b[skip : skip+size : skip+size]
}

func directReadFaio(env *Env) (Measurement, error) {
	if !env.InProcess {
		return runIsolated(env, "W6d", Faio)
	}
	return withThreadCount(func() (Measurement, error) {
		return readFaio(env, env.Sizes.DirectReads, os.O_RDONLY|syscall.O_DIRECT, alignedBuffer)
	})
}

func directReadGoroutines(env *Env) (Measurement, error) {
	if !env.InProcess {
		return runIsolated(env, "W6d", Goroutines)
	}
	return withThreadCount(func() (Measurement, error) {
		return readGoroutines(env, env.Sizes.DirectReads, os.O_RDONLY|syscall.O_DIRECT, alignedBuffer)
	})
}

// withThreadCount runs run while sampling the process's thread count, and
// adds the peak (and the io-wq workers among it) to its measurement.
func withThreadCount(run func() (Measurement, error)) (Measurement, error) {
	sampler := startThreadSampler()
	m, err := run()
	peak, iowq, serr := sampler.Stop()
	if err != nil {
		return m, err
	}
	if serr != nil {
		return m, fmt.Errorf("bench: counting threads: %w", serr)
	}
	m.Threads, m.IOWQThreads = peak, iowq
	return m, nil
}
