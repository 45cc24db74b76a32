package aio

import (
	"bytes"
	"context"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"io"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"
)

// fileModel is what a file should be: its bytes and the position.
type fileModel struct {
	data []byte
	pos  int64
}

func (m *fileModel) writeAt(b []byte, off int64) {
	if len(b) == 0 {
		return // an empty write does not extend the file
	}
	if end := int(off) + len(b); end > len(m.data) {
		m.data = append(m.data, make([]byte, end-len(m.data))...)
	}
	copy(m.data[off:], b)
}

// readAt returns what ReadAt should: the bytes there, and io.EOF when
// fewer than n remain.
func (m *fileModel) readAt(n int, off int64) ([]byte, error) {
	if off >= int64(len(m.data)) {
		if n == 0 {
			return nil, nil
		}
		return nil, io.EOF
	}
	got := m.data[off:min(int(off)+n, len(m.data))]
	if len(got) < n {
		return got, io.EOF
	}
	return got, nil
}

// fileStep is one operation of a generated sequence.
type fileStep struct {
	kind   string
	n      int   // length
	off    int64 // offset (ReadAt, WriteAt, Seek)
	split  int   // where Readv/Writev split their buffer
	whence int
	fill   byte
}

func (s fileStep) String() string {
	return fmt.Sprintf("%s(n=%d off=%d split=%d whence=%d)", s.kind, s.n, s.off, s.split, s.whence)
}

var fileStepGen = rapid.Custom(func(t *rapid.T) fileStep {
	s := fileStep{
		kind: rapid.SampledFrom([]string{"WriteAt", "ReadAt", "Write", "Read", "Writev", "Readv", "Seek", "Stat"}).Draw(t, "kind"),
		n:    rapid.IntRange(0, 600).Draw(t, "n"),
		off:  int64(rapid.IntRange(0, 3000).Draw(t, "off")),
		fill: rapid.Byte().Draw(t, "fill"),
	}
	s.split = rapid.IntRange(0, s.n).Draw(t, "split")
	s.whence = rapid.IntRange(io.SeekStart, io.SeekEnd).Draw(t, "whence")
	return s
})

// Any sequence of file operations, run by a task, leaves the file and every
// result as the model says, and the file on disk (read by os) agrees.
func TestFileMatchesModel(t *testing.T) {
	dir := t.TempDir()
	rt := newRuntime(t, runtime.Config{Workers: 2})
	run := 0
	rapid.Check(t, func(rt2 *rapid.T) {
		steps := rapid.SliceOfN(fileStepGen, 1, 40).Draw(rt2, "steps")
		run++
		name := filepath.Join(dir, fmt.Sprint(run))
		var m fileModel
		_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
			f, err := OpenFile(ctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				return 0, err
			}
			defer f.Close(ctx)
			for i, s := range steps {
				if err := checkStep(ctx, f, &m, s); err != nil {
					return 0, fmt.Errorf("step %d %v: %w", i, s, err)
				}
			}
			return 0, nil
		})
		if err != nil {
			rt2.Fatal(err)
		}
		onDisk, err := os.ReadFile(name)
		if err != nil || !bytes.Equal(onDisk, m.data) {
			rt2.Fatalf("file on disk has %d bytes, model %d (%v)", len(onDisk), len(m.data), err)
		}
	})
}

// checkStep runs s on f and on m and compares the outcomes.
func checkStep(ctx context.Context, f *File, m *fileModel, s fileStep) error {
	payload := bytes.Repeat([]byte{s.fill}, s.n)
	buf := make([]byte, s.n)
	switch s.kind {
	case "WriteAt":
		if n, err := f.WriteAt(ctx, payload, s.off); err != nil || n != s.n {
			return fmt.Errorf("WriteAt = %d, %v", n, err)
		}
		m.writeAt(payload, s.off)
	case "Write", "Writev":
		var n int
		var err error
		if s.kind == "Write" {
			n, err = f.Write(ctx, payload)
		} else {
			n, err = f.Writev(ctx, [][]byte{payload[:s.split], nil, payload[s.split:]})
		}
		if err != nil || n != s.n {
			return fmt.Errorf("%s = %d, %v", s.kind, n, err)
		}
		m.writeAt(payload, m.pos)
		m.pos += int64(s.n)
	case "ReadAt":
		n, err := f.ReadAt(ctx, buf, s.off)
		want, werr := m.readAt(s.n, s.off)
		if n != len(want) || err != werr || !bytes.Equal(buf[:n], want) {
			return fmt.Errorf("ReadAt = %d, %v; model %d, %v", n, err, len(want), werr)
		}
	case "Read", "Readv":
		var n int
		var err error
		if s.kind == "Read" {
			n, err = f.Read(ctx, buf)
		} else {
			n, err = f.Readv(ctx, [][]byte{buf[:s.split], buf[s.split:]})
		}
		want, _ := m.readAt(s.n, m.pos)
		// One read(2) returns what is there; at the end, 0 and io.EOF
		// (nothing at all for an empty buffer).
		var werr error
		if len(want) == 0 && s.n > 0 {
			werr = io.EOF
		}
		if n != len(want) || err != werr || !bytes.Equal(buf[:n], want) {
			return fmt.Errorf("%s = %d, %v; model %d, %v", s.kind, n, err, len(want), werr)
		}
		m.pos += int64(n)
	case "Seek":
		base := map[int]int64{io.SeekStart: 0, io.SeekCurrent: m.pos, io.SeekEnd: int64(len(m.data))}[s.whence]
		off := s.off - 1500 // negative offsets too
		pos, err := f.Seek(ctx, off, s.whence)
		if base+off < 0 {
			if err == nil {
				return fmt.Errorf("Seek to %d succeeded", base+off)
			}
			return nil
		}
		if err != nil || pos != base+off {
			return fmt.Errorf("Seek = %d, %v; model %d", pos, err, base+off)
		}
		m.pos = pos
	case "Stat":
		fi, err := f.Stat(ctx)
		if err != nil || fi.Size() != int64(len(m.data)) {
			return fmt.Errorf("Stat = %v, %v; model size %d", fi, err, len(m.data))
		}
	}
	return nil
}
