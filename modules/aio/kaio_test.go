package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

const directBlock = 4096

// alignedBlocks returns n blocks of memory aligned for O_DIRECT.
func alignedBlocks(n int) []byte {
	b := make([]byte, (n+1)*directBlock)
	skip := int((directBlock - uintptr(unsafe.Pointer(&b[0]))%directBlock) % directBlock)
	return b[skip : skip+n*directBlock]
}

// directFile creates a file of size bytes of pseudo-random data in a
// temporary directory and returns its path and contents. It skips the test
// where that directory's file system refuses O_DIRECT, or Linux AIO with
// RWF_NOWAIT on it (tmpfs: such files' operations all run on the blocking
// pool, as TestPortableDirectIORefusedForGood checks).
func directFile(t *testing.T, size int) (string, []byte) {
	t.Helper()
	name, data := directFileAny(t, size)
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := kaioProbe(int(f.Fd())); err != nil {
		t.Skipf("Linux AIO does not take O_DIRECT reads with RWF_NOWAIT of %s: %v", name, err)
	}
	if theKaio() == nil {
		t.Skip("the process's Linux AIO context could not be created")
	}
	return name, data
}

// directFileAny is directFile without Linux AIO's part: it skips only
// where O_DIRECT is refused.
func directFileAny(t *testing.T, size int) (string, []byte) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "direct.dat")
	data := randomBytes(size, 61)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Written back before any O_DIRECT read: over dirty pages a read with
	// RWF_NOWAIT fails with EAGAIN, and directFile's probe skipped every
	// test that needs Linux AIO (on ext4, found by a reviewer).
	if err := syncFile(name); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Skipf("O_DIRECT refused here: %v", err)
	}
	f.Close()
	return name, data
}

// syncFile writes the named file's data back to its device.
func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// kaioProbe reads the first block of fd through a context of its own, as
// submitKaio would, and returns why it could not.
func kaioProbe(fd int) error {
	k := newKaio(1)
	if k == nil {
		return errors.New("io_setup or io_getevents refused")
	}
	defer func() {
		unix.Syscall(unix.SYS_IO_DESTROY, k.id, 0, 0)
		k.efile.Close()
	}()
	buf := alignedBlocks(1)
	cb := kaioCB{rwFlags: kaioNowait, opcode: kaioCmdPread, fildes: uint32(fd),
		buf: uint64(uintptr(unsafe.Pointer(&buf[0]))), nbytes: directBlock}
	if e := k.ioSubmit(&cb); e != 0 {
		return fmt.Errorf("io_submit: %v", e)
	}
	var ev kaioEvent
	ts := unix.NsecToTimespec(int64(5 * time.Second))
	if n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, k.id, 1, 1, uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&ts)), 0); e != 0 || n != 1 {
		return fmt.Errorf("io_getevents: %d, %v", n, e)
	}
	if ev.res < 0 {
		return fmt.Errorf("completion: %v", syscall.Errno(-ev.res))
	}
	return nil
}

// withKaio makes k (nil: Linux AIO unavailable) the process's AIO context
// for the rest of the test.
func withKaio(t *testing.T, k *kaio) {
	t.Helper()
	theKaio()
	old := kaioCtx.Swap(k)
	t.Cleanup(func() {
		kaioCtx.Store(old)
		if k != nil {
			k.close(t)
		}
	})
}

// stubKaio installs a new AIO context whose io_submit is submit (which
// may call k.ioSubmit), and returns it; it skips the test where there is
// none.
func stubKaio(t *testing.T, submit func(k *kaio, cb *kaioCB) syscall.Errno) *kaio {
	t.Helper()
	k := newKaio(64)
	if k == nil {
		t.Skip("Linux AIO (io_setup) is unavailable here")
	}
	k.submit = func(cb *kaioCB) syscall.Errno { return submit(k, cb) }
	withKaio(t, k)
	return k
}

// close waits for k's reaper to end and releases k's context and eventfd.
func (k *kaio) close(t *testing.T) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		k.mu.Lock()
		idle := !k.reaping && len(k.reqs) == 0
		k.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("AIO reaper still running with %d operations", len(k.reqs))
		}
		time.Sleep(time.Millisecond)
	}
	unix.Syscall(unix.SYS_IO_DESTROY, k.id, 0, 0)
	k.efile.Close()
}

// onDirectFile runs fn as a task of rt with name opened with flag, and
// closes the file after.
func onDirectFile(t *testing.T, rt *runtime.Runtime, name string, flag int, fn func(ctx context.Context, f *File) error) {
	t.Helper()
	runTask(t, rt, func(ctx context.Context) error {
		f, err := OpenFile(ctx, name, flag, 0)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		return fn(ctx, f)
	})
}

// readDirectConcurrently reads every block of the O_DIRECT file name with
// tasks readers at once, each block at its own random turn, and checks the
// bytes against want.
func readDirectConcurrently(t *testing.T, rt *runtime.Runtime, name string, want []byte, readers int) {
	t.Helper()
	onDirectFile(t, rt, name, os.O_RDONLY|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		blocks := len(want) / directBlock
		order := rand.Perm(blocks)
		var hs []*runtime.JoinHandle[struct{}]
		for r := range readers {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				buf := alignedBlocks(1)
				for i := r; i < blocks; i += readers {
					off := int64(order[i]) * directBlock
					clear(buf)
					n, err := f.ReadAt(ctx, buf, off)
					if err != nil || n != directBlock {
						return struct{}{}, fmt.Errorf("ReadAt(%d) = %d, %v", off, n, err)
					}
					if !bytes.Equal(buf, want[off:off+directBlock]) {
						return struct{}{}, fmt.Errorf("block at %d: wrong bytes", off)
					}
				}
				return struct{}{}, nil
			}))
		}
		return joinAll(ctx, hs)
	})
}

// On the portable backend a task's O_DIRECT reads and writes at an offset
// go through Linux AIO, many at once, and move the right bytes.
func TestPortableDirectIOUsesLinuxAIO(t *testing.T) {
	const size = 256 * directBlock
	name, data := directFile(t, size)
	rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable})

	before := kaioSubmits.Load()
	readDirectConcurrently(t, rt, name, data, 64)
	if got := kaioSubmits.Load() - before; got != size/directBlock {
		t.Errorf("Linux AIO took %d of %d reads", got, size/directBlock)
	}

	// Writes: 32 tasks overwrite every block with new bytes, then a
	// plain read of the file sees them all.
	fresh := randomBytes(size, 62)
	before = kaioSubmits.Load()
	onDirectFile(t, rt, name, os.O_RDWR|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		var hs []*runtime.JoinHandle[struct{}]
		for w := range 32 {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				buf := alignedBlocks(2)
				for off := w * 2 * directBlock; off < size; off += 32 * 2 * directBlock {
					copy(buf, fresh[off:])
					if n, err := f.WriteAt(ctx, buf, int64(off)); err != nil || n != len(buf) {
						return struct{}{}, fmt.Errorf("WriteAt(%d) = %d, %v", off, n, err)
					}
				}
				return struct{}{}, nil
			}))
		}
		return joinAll(ctx, hs)
	})
	if got := kaioSubmits.Load() - before; got != size/(2*directBlock) {
		t.Errorf("Linux AIO took %d of %d writes", got, size/(2*directBlock))
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, fresh) {
		t.Fatal("the file does not hold the bytes written through Linux AIO")
	}
}

// What io_submit refuses (EAGAIN when the context is full, EINVAL for a
// file system without O_DIRECT AIO) runs on the blocking pool instead:
// with every other submission refused, every read is right, half went
// through Linux AIO, and the reaper ends with the last of them.
func TestPortableDirectIORefusedByLinuxAIO(t *testing.T) {
	const size = 256 * directBlock
	name, data := directFile(t, size)
	var calls atomic.Int64
	stubKaio(t, func(k *kaio, cb *kaioCB) syscall.Errno {
		if calls.Add(1)%2 == 0 {
			return unix.EAGAIN
		}
		return k.ioSubmit(cb)
	})
	rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable})
	before := kaioSubmits.Load()
	readDirectConcurrently(t, rt, name, data, 64)
	if took := kaioSubmits.Load() - before; took != size/directBlock/2 {
		t.Errorf("Linux AIO took %d of %d reads with every other refused", took, size/directBlock)
	}
}

// A file system that refuses NOWAIT AIO (tmpfs says EOPNOTSUPP) refuses
// it for every operation of the file: after the first refusal, the File's
// operations go straight to the blocking pool.
func TestPortableDirectIORefusedForGood(t *testing.T) {
	const size = 64 * directBlock
	name, data := directFileAny(t, size)
	var calls atomic.Int64
	stubKaio(t, func(k *kaio, cb *kaioCB) syscall.Errno {
		calls.Add(1)
		return unix.EOPNOTSUPP
	})
	rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable})
	readDirectConcurrently(t, rt, name, data, 1)
	if n := calls.Load(); n != 1 {
		t.Errorf("io_submit was tried %d times for one file, want once", n)
	}
}

// A refused submission that was the only operation ends the reaper it
// started, even when the reaper already waits for the eventfd.
func TestPortableDirectIORefusalEndsAnIdleReaper(t *testing.T) {
	name, data := directFile(t, directBlock)
	k := stubKaio(t, func(k *kaio, cb *kaioCB) syscall.Errno {
		time.Sleep(20 * time.Millisecond) // the reaper gets to its wait
		return unix.EAGAIN
	})
	rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	readDirectConcurrently(t, rt, name, data, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		k.mu.Lock()
		reaping := k.reaping
		k.mu.Unlock()
		if !reaping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reaper still waits with no operation outstanding")
		}
		time.Sleep(time.Millisecond)
	}
}

// Read and Write use the file position, which Linux AIO does not know:
// they go there at the position as an explicit offset, under the position
// lock, and move the position as os does.
func TestPortableDirectIOAtThePosition(t *testing.T) {
	const size = 8 * directBlock
	name, data := directFile(t, size)
	rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	fresh := randomBytes(2*directBlock, 63)
	onDirectFile(t, rt, name, os.O_RDWR|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		before := kaioSubmits.Load()
		buf := alignedBlocks(2)
		copy(buf, fresh)
		if n, err := f.Write(ctx, buf); err != nil || n != len(buf) {
			return fmt.Errorf("Write = %d, %v", n, err)
		}
		// The position is now 2 blocks in: Read goes on from there.
		if n, err := f.Read(ctx, buf[:directBlock]); err != nil || n != directBlock {
			return fmt.Errorf("Read = %d, %v", n, err)
		}
		if !bytes.Equal(buf[:directBlock], data[2*directBlock:3*directBlock]) {
			return errors.New("Read after Write: not the third block")
		}
		if kaioSubmits.Load() == before {
			return errors.New("no transfer at the file position went through Linux AIO")
		}
		if pos, err := f.Seek(ctx, 0, io.SeekCurrent); err != nil || pos != 3*directBlock {
			return fmt.Errorf("position after Write and Read = %d, %v, want %d", pos, err, 3*directBlock)
		}
		// A later ReadAt goes there too, and sees what Write wrote.
		before = kaioSubmits.Load()
		if n, err := f.ReadAt(ctx, buf, 0); err != nil || n != len(buf) || !bytes.Equal(buf, fresh) {
			return fmt.Errorf("ReadAt = %d, %v, right: %v", n, err, bytes.Equal(buf, fresh))
		}
		if kaioSubmits.Load() == before {
			return errors.New("ReadAt did not go through Linux AIO")
		}
		return nil
	})
}

// A write that extends the file is done inside io_submit on ext4, which
// would hold up every task of the worker: it is submitted with RWF_NOWAIT,
// comes back EAGAIN, and runs on the blocking pool. The file ends up with
// every byte either way.
func TestPortableDirectIOExtendingWrites(t *testing.T) {
	name, _ := directFile(t, directBlock)
	rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	const chunk, chunks = 16 * directBlock, 32
	want := randomBytes(chunk*chunks, 64)
	before := kaioPunted.Load()
	onDirectFile(t, rt, name, os.O_RDWR|os.O_TRUNC|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		buf := alignedBlocks(chunk / directBlock)
		for i := range chunks {
			copy(buf, want[i*chunk:])
			if n, err := f.WriteAt(ctx, buf, int64(i*chunk)); err != nil || n != chunk {
				return fmt.Errorf("WriteAt(%d) = %d, %v", i*chunk, n, err)
			}
		}
		return nil
	})
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the file holds %d bytes, want the %d written", len(got), len(want))
	}
	punted := kaioPunted.Load() - before
	var fs unix.Statfs_t
	if err := unix.Statfs(name, &fs); err == nil && fs.Type == unix.EXT4_SUPER_MAGIC && punted == 0 {
		t.Errorf("no extending write on ext4 came back EAGAIN: they ran inside io_submit, on the worker")
	}
	t.Logf("%d of %d extending writes went to the blocking pool", punted, chunks)
}

// Where Linux AIO is unavailable the blocking pool does the work.
func TestPortableDirectIOWithoutLinuxAIO(t *testing.T) {
	const size = 64 * directBlock
	name, data := directFileAny(t, size)
	withKaio(t, nil)
	rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable})
	before := kaioSubmits.Load()
	readDirectConcurrently(t, rt, name, data, 16)
	if got := kaioSubmits.Load() - before; got != 0 {
		t.Errorf("Linux AIO took %d reads while unavailable", got)
	}
}

// Linux AIO reports what pread would: EINVAL for a buffer O_DIRECT
// cannot use, io.EOF at the end of the file, and ctx's error, with nothing
// submitted, for a task whose ctx has ended.
func TestPortableDirectIOErrors(t *testing.T) {
	const size = 4 * directBlock
	name, _ := directFile(t, size)
	rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	onDirectFile(t, rt, name, os.O_RDONLY|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		buf := alignedBlocks(2)

		// Misaligned: what pread says on the same descriptor (EINVAL
		// on most file systems; tmpfs, since Linux 6.6, reads it).
		before := kaioSubmits.Load()
		mis := buf[1 : 1+directBlock]
		wantN, wantErr := unix.Pread(f.guard.fd, mis, 0)
		n, err := f.ReadAt(ctx, mis, 0)
		if wantErr != nil {
			if !errors.Is(err, wantErr) {
				return fmt.Errorf("misaligned ReadAt: %d, %v, want pread's %v", n, err, wantErr)
			}
		} else if err != nil || n != wantN {
			return fmt.Errorf("misaligned ReadAt: %d, %v, want pread's %d, nil", n, err, wantN)
		}
		var pe *os.PathError
		if err != nil && !errors.As(err, &pe) {
			return fmt.Errorf("misaligned ReadAt: %T, want *os.PathError", err)
		}
		if kaioSubmits.Load() == before {
			return errors.New("the misaligned read did not go through Linux AIO")
		}

		// At and across the end.
		if n, err := f.ReadAt(ctx, buf[:directBlock], size); n != 0 || err != io.EOF {
			return fmt.Errorf("ReadAt at the end = %d, %v, want 0, EOF", n, err)
		}
		if n, err := f.ReadAt(ctx, buf, size-directBlock); n != directBlock || err != io.EOF {
			return fmt.Errorf("ReadAt across the end = %d, %v, want %d, EOF", n, err, directBlock)
		}

		// An ended ctx submits nothing.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		before = kaioSubmits.Load()
		if _, err := f.ReadAt(cctx, buf[:directBlock], 0); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("ReadAt with an ended ctx: %v, want context.Canceled", err)
		}
		if kaioSubmits.Load() != before {
			return errors.New("a read with an ended ctx was submitted")
		}
		return nil
	})
}

// A task cancelled while its O_DIRECT read is with the device gets the
// read's result: its buffer is filled by then, and the wait cannot be cut
// short while the device may still write to it.
func TestPortableDirectIOCancelledDuringTheRead(t *testing.T) {
	const size = 256 * directBlock
	name, data := directFile(t, size)
	rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable})
	onDirectFile(t, rt, name, os.O_RDONLY|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		for i := range 200 {
			buf := alignedBlocks(1)
			off := int64(i%(size/directBlock)) * directBlock
			h := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				return f.ReadAt(ctx, buf, off)
			})
			// Cancel at varying points: before, during or after.
			for range i % 3 {
				if err := runtime.Yield(ctx); err != nil {
					return err
				}
			}
			h.Cancel()
			n, err := h.Join(ctx)
			switch {
			case err == nil:
				if n != directBlock || !bytes.Equal(buf, data[off:off+directBlock]) {
					return fmt.Errorf("read %d at %d: %d bytes, right: %v", i, off, n, bytes.Equal(buf, data[off:off+directBlock]))
				}
			case errors.Is(err, context.Canceled):
			default:
				return fmt.Errorf("read %d: %v", i, err)
			}
		}
		return nil
	})
}

// On the ring, a task's Read, Write, Readv and Writev at the file position
// of an O_DIRECT file move the position as os.File's do, O_APPEND
// included. Submitted at the file position, they left it where it was
// (the kernel stores it back at issue, before an O_DIRECT transfer ends):
// two Reads read the same block, and Writes overwrote each other (found by
// a reviewer).
func TestDirectIOAtThePositionOnTheRing(t *testing.T) {
	const blocks = 4
	name, data := directFileAny(t, blocks*directBlock)
	if fd, err := unix.Open(name, unix.O_RDONLY, 0); err == nil {
		// Out of the page cache, so that the device answers.
		unix.Fsync(fd)
		unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
		unix.Close(fd)
	}
	rt := newRuntime(t, runtime.Config{Workers: 1})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("io_uring is not available here")
	}
	block := func(i int) []byte { return data[i*directBlock : (i+1)*directBlock] }
	ws := bytes.Repeat([]byte{'W'}, directBlock)
	onDirectFile(t, rt, name, os.O_RDWR|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		buf := alignedBlocks(1)
		at := func(what string, want int64) error {
			if pos, err := f.Seek(ctx, 0, io.SeekCurrent); err != nil || pos != want {
				return fmt.Errorf("position after %s = %d, %v; want %d", what, pos, err, want)
			}
			return nil
		}
		for i := range 2 {
			if n, err := f.Read(ctx, buf); n != directBlock || err != nil || !bytes.Equal(buf, block(i)) {
				return fmt.Errorf("Read %d = %d, %v, block %d: %v", i, n, err, i, bytes.Equal(buf, block(i)))
			}
			if err := at(fmt.Sprintf("Read %d", i), int64(i+1)*directBlock); err != nil {
				return err
			}
		}
		copy(buf, ws)
		if n, err := f.Write(ctx, buf); n != directBlock || err != nil {
			return fmt.Errorf("Write = %d, %v", n, err)
		}
		if err := at("Write", 3*directBlock); err != nil {
			return err
		}
		if n, err := f.Readv(ctx, [][]byte{buf}); n != directBlock || err != nil || !bytes.Equal(buf, block(3)) {
			return fmt.Errorf("Readv = %d, %v, block 3: %v", n, err, bytes.Equal(buf, block(3)))
		}
		if err := at("Readv", 4*directBlock); err != nil {
			return err
		}
		if _, err := f.Seek(ctx, directBlock, io.SeekStart); err != nil {
			return err
		}
		copy(buf, ws)
		if n, err := f.Writev(ctx, [][]byte{buf}); n != directBlock || err != nil {
			return fmt.Errorf("Writev = %d, %v", n, err)
		}
		return at("Writev", 2*directBlock)
	})
	want := slices.Concat(block(0), ws, ws, block(3))
	if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file after the writes: %d bytes, %v; as expected: %v", len(got), err, bytes.Equal(got, want))
	}
	onDirectFile(t, rt, name, os.O_WRONLY|os.O_APPEND|unix.O_DIRECT, func(ctx context.Context, f *File) error {
		buf := alignedBlocks(1)
		copy(buf, ws)
		if n, err := f.Write(ctx, buf); n != directBlock || err != nil {
			return fmt.Errorf("Write with O_APPEND = %d, %v", n, err)
		}
		if pos, err := f.Seek(ctx, 0, io.SeekCurrent); err != nil || pos != (blocks+1)*directBlock {
			return fmt.Errorf("position after a Write with O_APPEND = %d, %v; want the end, %d", pos, err, (blocks+1)*directBlock)
		}
		return nil
	})
	if fi, err := os.Stat(name); err != nil || fi.Size() != (blocks+1)*directBlock {
		t.Fatalf("size after the appending Write: %v, %v", fi.Size(), err)
	}
}
