package aio

import (
	"context"
	"io"
)

// FileIO is a File as the io interfaces (io.Reader, io.Writer,
// io.ReaderAt, io.WriterAt, io.Seeker, io.Closer, io.ReaderFrom), for code
// written against them: bufio, io.Copy, archive readers. Like an *os.File
// it also has Truncate, and ReadFrom moves a connection's bytes into the
// file without copying them through user memory (see ReadFrom and
// NetConn.WriteTo). Its methods take no context and
// cannot be cancelled; called from a task, an operation suspends the task,
// from a plain goroutine it blocks the goroutine. It is safe for concurrent
// use as the File is.
//
// A FileIO of a zero or nil File, the zero FileIO and a nil *FileIO fail
// every method at once as a zero File does: with a *fs.PathError wrapping
// os.ErrInvalid.
type FileIO struct{ f *File }

var (
	_ io.ReadWriteSeeker = (*FileIO)(nil)
	_ io.ReaderAt        = (*FileIO)(nil)
	_ io.WriterAt        = (*FileIO)(nil)
	_ io.Closer          = (*FileIO)(nil)
)

// IO returns f as the io interfaces.
func (f *File) IO() *FileIO { return &FileIO{f: f} }

// File returns the underlying File (nil for a zero or nil FileIO).
func (x *FileIO) File() *File {
	if x == nil {
		return nil
	}
	return x.f
}

// Read reads from the file position, like os.File.Read.
func (x *FileIO) Read(b []byte) (int, error) { return x.File().Read(context.Background(), b) }

// Write writes at the file position, like os.File.Write.
func (x *FileIO) Write(b []byte) (int, error) { return x.File().Write(context.Background(), b) }

// ReadAt reads at off, like os.File.ReadAt.
func (x *FileIO) ReadAt(b []byte, off int64) (int, error) {
	return x.File().ReadAt(context.Background(), b, off)
}

// WriteAt writes at off, like os.File.WriteAt.
func (x *FileIO) WriteAt(b []byte, off int64) (int, error) {
	return x.File().WriteAt(context.Background(), b, off)
}

// Seek sets the file position, like os.File.Seek.
func (x *FileIO) Seek(offset int64, whence int) (int64, error) {
	return x.File().Seek(context.Background(), offset, whence)
}

// Truncate changes the size of the file, like os.File.Truncate.
func (x *FileIO) Truncate(size int64) error { return x.File().Truncate(context.Background(), size) }

// Close closes the file.
func (x *FileIO) Close() error { return x.File().Close(context.Background()) }
