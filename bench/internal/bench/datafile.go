package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The W6 data file holds a pattern that any read can be checked against
// without keeping the file in memory: the 8-byte little-endian word at byte
// offset o is patternWord(o/8). A file with the right size and the pattern
// at both ends is taken to be ours and reused; the page-cache warm-up reads
// all of it and checks every word.

// ErrForeignFile is returned for a data file path that holds something
// other than a faio-bench data file: the benchmark never overwrites it.
var ErrForeignFile = errors.New("not a faio-bench data file; refusing to overwrite it")

// errPatternMismatch reports a data file whose content differs from the
// pattern.
var errPatternMismatch = errors.New("data file content differs from the pattern")

// patternWord is splitmix64 of the word's index: cheap, and different for
// every word, so a read from the wrong offset cannot pass the check.
func patternWord(i uint64) uint64 {
	z := i*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// fillPattern writes the pattern of the file bytes [off, off+len(b)) into
// b; off and len(b) are multiples of 8.
func fillPattern(b []byte, off int64) {
	w := uint64(off / 8)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], patternWord(w))
		w++
	}
}

// verifyPattern checks every word of b, read from offset off.
func verifyPattern(b []byte, off int64) error {
	w := uint64(off / 8)
	for i := 0; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != patternWord(w) {
			return fmt.Errorf("%w: %w at offset %d", ErrValidation, errPatternMismatch, off+int64(i))
		}
		w++
	}
	return nil
}

// verifyPatternEnds checks the first and the last word of b: enough to
// catch a read from the wrong offset or a torn one at nearly no cost.
func verifyPatternEnds(b []byte, off int64) error {
	if len(b) < 8 {
		return verifyPattern(b, off)
	}
	last := len(b) - 8
	if err := verifyPattern(b[:8], off); err != nil {
		return err
	}
	return verifyPattern(b[last:last+8], off+int64(last))
}

// DefaultDataFile is the data file used when -file is not given: one per
// size in the system's temporary directory, created once and reused.
func DefaultDataFile(size int64) string {
	return filepath.Join(os.TempDir(), "faio-bench-w6-"+sizeName(size)+".dat")
}

// sizeName writes a byte count in the largest binary unit that divides it:
// "1GiB", "64MiB", "8192B".
func sizeName(size int64) string {
	switch {
	case size > 0 && size%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", size>>30)
	case size > 0 && size%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", size>>20)
	}
	return fmt.Sprintf("%dB", size)
}

// ensureDataFile makes sure path holds a data file of size bytes, writing
// one (to a temporary name, renamed into place) when it is missing, empty
// or one of ours of another size, or when rewrite is set. It reports
// whether it wrote the file.
func ensureDataFile(path string, size int64, rewrite bool, log io.Writer) (bool, error) {
	looksRight, err := checkDataFile(path, size)
	if err != nil {
		return false, err
	}
	if looksRight && !rewrite {
		return false, nil
	}
	return true, writeDataFile(path, size, log)
}

// checkDataFile reports whether path is a data file of size bytes, judging
// by its size and its first and last blocks. A missing or empty file is
// not, and neither is one of ours of another size; anything else that is
// not ours fails with ErrForeignFile.
func checkDataFile(path string, size int64) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, fmt.Errorf("%s: %w", path, ErrForeignFile)
	}
	if st.Size() == 0 {
		return false, nil
	}
	head := make([]byte, min(st.Size(), 4096)&^7)
	if _, err := f.ReadAt(head, 0); err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(head) == 0 || verifyPattern(head, 0) != nil {
		return false, fmt.Errorf("%s: %w", path, ErrForeignFile)
	}
	if st.Size() != size {
		return false, nil
	}
	tail := make([]byte, len(head))
	off := size - int64(len(tail))
	if _, err := f.ReadAt(tail, off); err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	return verifyPattern(tail, off) == nil, nil
}

// dataChunk is the unit of writing and of the warm-up read.
const dataChunk = 1 << 20

// writeDataFile writes the pattern file, reporting progress on log for
// large files.
func writeDataFile(path string, size int64, log io.Writer) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	fmt.Fprintf(log, "faio-bench: writing the %s data file %s\n", sizeName(size), path)
	buf := make([]byte, dataChunk)
	step := max(size/4, dataChunk)
	for off := int64(0); off < size; off += dataChunk {
		b := buf[:min(int64(len(buf)), size-off)]
		fillPattern(b, off)
		if _, err := tmp.WriteAt(b, off); err != nil {
			return err
		}
		if done := off + int64(len(b)); done%step == 0 && done < size {
			fmt.Fprintf(log, "faio-bench: ... %d%%\n", done*100/size)
		}
	}
	// On the device before W6d reads it: an O_DIRECT read of a range
	// still dirty in the page cache, or under writeback, must wait for
	// the writeback first. io_uring cannot issue such a read without
	// blocking and hands it to an io-wq kernel thread, so the first run
	// after the file was written measured the writeback, not the reads,
	// and only on the side that ran first (faio: 30 threads, 24 of them
	// io-wq, against 5 or 6 once the file was clean). A reused file is
	// clean already.
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// warmDataFile reads the whole file once, so the page cache holds it, and
// checks every word on the way.
func warmDataFile(path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, dataChunk)
	for off := int64(0); off < size; off += dataChunk {
		b := buf[:min(int64(len(buf)), size-off)]
		if _, err := f.ReadAt(b, off); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if err := verifyPattern(b, off); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}
