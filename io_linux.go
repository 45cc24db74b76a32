package faio

import (
	"context"
	"io/fs"

	"github.com/faio-go/faio/modules/aio"
)

// The I/O entry points exist on Linux only (package aio is Linux-only); on
// other systems the facade offers the runtime, sync and channel.

// Files and sockets: in a task, through its worker's io_uring (on the
// portable backend: the runtime's epoll instance for sockets, a blocking
// pool for files, Linux AIO for O_DIRECT); in a plain goroutine, the
// system call itself or Go's netpoller. Each call runs on the runtime of
// ctx: the task's own, or the one WithRuntime attached. Their methods are
// documented in package aio (go doc shows only the alias here):
// go doc github.com/faio-go/faio/modules/aio File.
type (
	File     = aio.File
	Listener = aio.Listener
	Conn     = aio.Conn
	UDPConn  = aio.UDPConn
	// ListenConfig holds a listening socket's options (SO_REUSEPORT, the
	// backlog); its Listen and ListenUDP methods are the entry points.
	ListenConfig = aio.ListenConfig
)

// The standard-interface adapters that Conn.NetConn, Listener.NetListener,
// UDPConn.NetPacketConn and File.IO return (net.Conn, net.Listener,
// net.PacketConn and the io interfaces), named here so that code using the
// facade can declare them.
type (
	NetConn       = aio.NetConn
	NetListener   = aio.NetListener
	NetPacketConn = aio.NetPacketConn
	FileIO        = aio.FileIO
)

// Open opens name for reading, like os.Open.
func Open(ctx context.Context, name string) (*File, error) { return aio.Open(ctx, name) }

// Create creates or truncates name, like os.Create.
func Create(ctx context.Context, name string) (*File, error) { return aio.Create(ctx, name) }

// OpenFile opens name with flag and perm, like os.OpenFile.
func OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (*File, error) {
	return aio.OpenFile(ctx, name, flag, perm)
}

// ReadFile reads the whole file name, like os.ReadFile.
func ReadFile(ctx context.Context, name string) ([]byte, error) { return aio.ReadFile(ctx, name) }

// WriteFile writes data to name, like os.WriteFile.
func WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return aio.WriteFile(ctx, name, data, perm)
}

// Listen announces on a TCP address or a Unix socket ("unix",
// "unixpacket"), like net.Listen.
func Listen(ctx context.Context, network, address string) (*Listener, error) {
	return aio.Listen(ctx, network, address)
}

// Dial connects to a TCP address or a Unix socket, like net.Dial.
func Dial(ctx context.Context, network, address string) (*Conn, error) {
	return aio.Dial(ctx, network, address)
}

// ListenUDP opens a UDP socket bound to address, like net.ListenPacket.
func ListenUDP(ctx context.Context, network, address string) (*UDPConn, error) {
	return aio.ListenUDP(ctx, network, address)
}

// DialUDP opens a UDP socket connected to address.
func DialUDP(ctx context.Context, network, address string) (*UDPConn, error) {
	return aio.DialUDP(ctx, network, address)
}
