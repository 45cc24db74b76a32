package uring

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RawSockaddrAny is storage large enough for any socket address, in the
// kernel's layout; PrepConnect and PrepAccept take a pointer to one.
type RawSockaddrAny = unix.RawSockaddrAny

// ErrNulInPath is returned by BytePtrFromString for a string containing a
// NUL byte, which the kernel would silently truncate.
var ErrNulInPath = errors.New("faio/uring: path contains a NUL byte")

// BytePtrFromString returns a NUL-terminated heap copy of s for PrepOpenat
// and PrepStatx. It allocates, so call it before the hot path and keep the
// result referenced until the request's CQE.
func BytePtrFromString(s string) (*byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("%w: %q", ErrNulInPath, s)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0], nil
}

// SockaddrFromAddrPort encodes ap into sa as a sockaddr_in (IPv4) or
// sockaddr_in6 (IPv6, IPv4-mapped included) and returns its length for
// PrepConnect. It allocates nothing unless ap has a named IPv6 zone, which
// it resolves to an interface index.
func SockaddrFromAddrPort(ap netip.AddrPort, sa *RawSockaddrAny) (uint32, error) {
	if sa == nil {
		return 0, errNilSockaddr
	}
	addr := ap.Addr()
	switch {
	case !addr.IsValid():
		return 0, fmt.Errorf("faio/uring: invalid address %v", ap)
	case addr.Is4():
		*sa = RawSockaddrAny{}
		in := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		in.Family = unix.AF_INET
		in.Port = htons(ap.Port())
		in.Addr = addr.As4()
		return unix.SizeofSockaddrInet4, nil
	default:
		scope, err := zoneIndex(addr.Zone())
		if err != nil {
			return 0, err
		}
		*sa = RawSockaddrAny{}
		in6 := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
		in6.Family = unix.AF_INET6
		in6.Port = htons(ap.Port())
		in6.Addr = addr.As16()
		in6.Scope_id = scope
		return unix.SizeofSockaddrInet6, nil
	}
}

func zoneIndex(zone string) (uint32, error) {
	if zone == "" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0, fmt.Errorf("faio/uring: IPv6 zone %q: %w", zone, err)
	}
	return uint32(ifi.Index), nil
}

// AddrPortFromSockaddr decodes the first n bytes of sa, as filled by an
// accept, into an address and port. IPv6 scope IDs become numeric zones.
func AddrPortFromSockaddr(sa *RawSockaddrAny, n uint32) (netip.AddrPort, error) {
	if sa == nil {
		return netip.AddrPort{}, errNilSockaddr
	}
	if n < 2 {
		return netip.AddrPort{}, fmt.Errorf("faio/uring: socket address too short (%d bytes)", n)
	}
	switch sa.Addr.Family {
	case unix.AF_INET:
		if n < unix.SizeofSockaddrInet4 {
			break
		}
		in := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(in.Addr), ntohs(in.Port)), nil
	case unix.AF_INET6:
		if n < unix.SizeofSockaddrInet6 {
			break
		}
		in6 := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
		addr := netip.AddrFrom16(in6.Addr)
		if in6.Scope_id != 0 {
			addr = addr.WithZone(strconv.FormatUint(uint64(in6.Scope_id), 10))
		}
		return netip.AddrPortFrom(addr, ntohs(in6.Port)), nil
	default:
		return netip.AddrPort{}, fmt.Errorf("faio/uring: address family %d is not IP", sa.Addr.Family)
	}
	return netip.AddrPort{}, fmt.Errorf("faio/uring: socket address of family %d truncated to %d bytes", sa.Addr.Family, n)
}

// htons converts a port to the network byte order the kernel stores in
// sockaddr ports, reading it back as a native uint16.
func htons(p uint16) uint16 {
	b := [2]byte{byte(p >> 8), byte(p)}
	return *(*uint16)(unsafe.Pointer(&b))
}

func ntohs(p uint16) uint16 {
	b := *(*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

var errNilSockaddr = errors.New("faio/uring: nil socket address")
