package aio

import (
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// fileStat is the fs.FileInfo of File.Stat, built from statx(2) as os
// builds its own from fstat(2), so the two agree field for field.
type fileStat struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
	sys     unix.Statx_t
}

func newFileStat(name string, stx *unix.Statx_t) *fileStat {
	return &fileStat{
		name:    filepath.Base(name),
		size:    int64(stx.Size),
		mode:    fileMode(uint32(stx.Mode)),
		modTime: time.Unix(stx.Mtime.Sec, int64(stx.Mtime.Nsec)),
		sys:     *stx,
	}
}

// fileMode converts st_mode to fs.FileMode with os's rules.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// Name returns the base name of the file, as os.FileInfo does.
func (s *fileStat) Name() string { return s.name }

// Size returns the length in bytes.
func (s *fileStat) Size() int64 { return s.size }

// Mode returns the file's mode and permission bits.
func (s *fileStat) Mode() fs.FileMode { return s.mode }

// ModTime returns the modification time.
func (s *fileStat) ModTime() time.Time { return s.modTime }

// IsDir reports whether the file is a directory.
func (s *fileStat) IsDir() bool { return s.mode.IsDir() }

// Sys returns the *unix.Statx_t the kernel filled.
func (s *fileStat) Sys() any { return &s.sys }
