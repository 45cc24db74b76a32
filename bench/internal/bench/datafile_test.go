package bench

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

const testFileSize = 256 << 10

func TestEnsureDataFileCreatesAndReuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	wrote, err := ensureDataFile(path, testFileSize, false, testLog{t})
	if err != nil || !wrote {
		t.Fatalf("first call: wrote %v, %v", wrote, err)
	}
	if err := warmDataFile(path, testFileSize); err != nil {
		t.Fatalf("fresh file: %v", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != testFileSize {
		t.Fatalf("stat: %v, %v", st, err)
	}
	if wrote, err := ensureDataFile(path, testFileSize, false, testLog{t}); err != nil || wrote {
		t.Errorf("second call: wrote %v, %v; want reuse", wrote, err)
	}
	// One of ours of another size is rewritten at the new size.
	if wrote, err := ensureDataFile(path, 2*testFileSize, false, testLog{t}); err != nil || !wrote {
		t.Errorf("other size: wrote %v, %v", wrote, err)
	}
	if err := warmDataFile(path, 2*testFileSize); err != nil {
		t.Error(err)
	}
	// No temporary file is left behind.
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d files", len(ents))
	}
}

// A file that is not ours is refused and left as it was.
func TestEnsureDataFileRefusesForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "precious")
	content := bytes.Repeat([]byte("keep me "), 1000)
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureDataFile(path, testFileSize, true, testLog{t}); !errors.Is(err, ErrForeignFile) {
		t.Errorf("error %v, want ErrForeignFile", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, content) {
		t.Error("the foreign file was changed")
	}
	if _, err := ensureDataFile(t.TempDir(), testFileSize, false, testLog{t}); !errors.Is(err, ErrForeignFile) {
		t.Errorf("directory: %v, want ErrForeignFile", err)
	}
}

// The warm-up read finds a damaged word anywhere, and the W6 setup then
// writes the file again.
func TestSetupFileReadRepairsDamage(t *testing.T) {
	env := tinyEnv(t, 2)
	env.Sizes.FileSize = testFileSize
	if err := setupFileRead(env); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(env.File, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, testFileSize/2+3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := warmDataFile(env.File, testFileSize); !errors.Is(err, errPatternMismatch) || !errors.Is(err, ErrValidation) {
		t.Fatalf("damaged file: %v", err)
	}
	if err := setupFileRead(env); err != nil {
		t.Fatal(err)
	}
	if err := warmDataFile(env.File, testFileSize); err != nil {
		t.Errorf("after setup: %v", err)
	}
}

func TestPattern(t *testing.T) {
	b := make([]byte, 64)
	fillPattern(b, 4096)
	if err := verifyPattern(b, 4096); err != nil {
		t.Error(err)
	}
	if err := verifyPattern(b[8:], 4104); err != nil {
		t.Errorf("sub-slice at its own offset: %v", err)
	}
	if err := verifyPattern(b, 4096+8); err == nil {
		t.Error("pattern passed at the wrong offset")
	}
	seen := map[uint64]bool{}
	for i := range uint64(1 << 16) {
		if w := patternWord(i); seen[w] {
			t.Fatalf("word %d repeats an earlier one", i)
		} else {
			seen[w] = true
		}
	}
}

func TestDefaultDataFile(t *testing.T) {
	for size, name := range map[int64]string{1 << 30: "faio-bench-w6-1GiB.dat", 64 << 20: "faio-bench-w6-64MiB.dat", 8192: "faio-bench-w6-8192B.dat"} {
		if got := DefaultDataFile(size); got != filepath.Join(os.TempDir(), name) {
			t.Errorf("%d: %s", size, got)
		}
	}
}

func TestAlignedBuffer(t *testing.T) {
	for range 100 {
		b := alignedBuffer(4096)
		if len(b) != 4096 || cap(b) != 4096 || uintptr(unsafe.Pointer(&b[0]))%directAlign != 0 {
			t.Fatalf("buffer at %p, len %d, cap %d", &b[0], len(b), cap(b))
		}
	}
}

// A file system without O_DIRECT makes W6d a skip, never a failure; other
// errors stay failures.
func TestDirectSkip(t *testing.T) {
	for _, errno := range []error{syscall.EINVAL, syscall.EOPNOTSUPP} {
		err := directSkip("/dev/shm/f", "opening", &os.PathError{Op: "open", Path: "/dev/shm/f", Err: errno})
		var skip *SkipError
		if !errors.As(err, &skip) || !strings.Contains(skip.Reason, "/dev/shm/f does not support O_DIRECT") {
			t.Errorf("%v: %v, want a skip", errno, err)
		}
	}
	eio := &os.PathError{Op: "read", Path: "f", Err: syscall.EIO}
	if err := directSkip("f", "reading", eio); err != eio {
		t.Errorf("EIO: %v, want it unchanged", err)
	}
	// The probe itself passes on a file system with O_DIRECT and fails on
	// a missing file.
	path := filepath.Join(t.TempDir(), "data")
	if err := probeDirect(path, 4096); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ensureDataFile(path, testFileSize, false, testLog{t}); err != nil {
		t.Fatal(err)
	}
	if err := probeDirect(path, 4096); err != nil {
		var skip *SkipError
		if !errors.As(err, &skip) {
			t.Errorf("probe: %v", err)
		}
	}
}
