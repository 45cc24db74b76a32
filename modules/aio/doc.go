// Package aio is faio-go's file and socket I/O: File, Listener/Conn and
// UDPConn mirror os.File, net.TCPConn (and net.UnixConn) and net.UDPConn,
// with ctx first on every method that may wait. A task's operations run
// on the io_uring of its faio worker. The package is built on the
// scheduler's exported API alone (runtime.Submit, runtime.SubmitOn,
// runtime.OnTask, runtime.RuntimeOf): an operation is an Op the calling
// task submits; its worker prepares it on its ring after the task
// suspended, batches it with others, and requeues the task with the
// completion.
//
//	f, err := aio.Open(ctx, "data.bin") // ctx: a task's context
//	if err != nil { ... }
//	defer f.Close(ctx)
//	n, err := f.ReadAt(ctx, buf, 0)
//
// # Which runtime
//
// A constructor (Open, Create, OpenFile, ReadFile, WriteFile, Listen,
// Dial, ListenUDP, DialUDP, and ListenConfig's Listen and ListenUDP) runs
// on the runtime of its ctx: the runtime of
// ctx's task or, in a plain goroutine, the one runtime.WithRuntime attached
// to ctx. The object remembers it: a File or Conn may then be used from
// tasks and goroutines alike. In a task an operation suspends the task. In
// a plain goroutine it costs what package os or net would: a file
// operation is the system call itself, and a socket operation waits in Go's
// netpoller (the socket is registered there on its first such wait).
// Since a goroutine's operations need nothing of the runtime, they go on
// working once it is closed: an object outlives its runtime (close it
// yourself), and a constructor given a closed runtime's context still
// opens one. What needs the workers, such as runtime.SpawnOn, fails with
// runtime.ErrClosed.
//
// A task's read of a regular file (not O_DIRECT) first tries the page
// cache inline, with preadv2(RWF_NOWAIT): data the cache holds costs one
// system call on the worker, and only a read that would wait for the disk
// goes to the ring (the task's cooperative budget is charged as for any
// operation that completes without suspending).
//
// Likewise a task's socket receive (Read, ReadFull) of at most 64 KiB is
// first tried on the spot, with recvfrom(MSG_DONTWAIT): bytes already in
// the socket, or its end, cost one system call, and only a receive that
// has to wait goes to the ring. A server's request often arrives while
// the task writes its previous reply, so this saves a suspension on many
// receives of request/response traffic; a socket whose tries keep finding
// nothing stops trying for a while (its receives go straight to the
// ring). Sends go to the ring, where they are batched.
//
//	ctx := runtime.WithRuntime(context.Background(), rt) // in main, say
//	data, err := aio.ReadFile(ctx, "config.json")
//
// # Sockets
//
// Listen and Dial take the networks "tcp", "tcp4", "tcp6" and the Unix
// domain stream networks "unix" and "unixpacket" (a path, or "@name" for
// an abstract address); both give the same *Listener and *Conn, whose
// addresses are *net.TCPAddr or *net.UnixAddr values. ListenConfig sets a
// listener's SO_REUSEPORT and backlog. Besides Read and Write, a Conn
// writes and reads several buffers with one system call (Writev, Readv:
// IORING_OP_WRITEV and READV on the ring) and sends a File's bytes
// without copying them through user memory (SendFile: splice through a
// pipe on the ring, sendfile(2) elsewhere). WriteZC is Write without the
// copy into the kernel (IORING_OP_SEND_ZC), returning once the kernel has
// let go of the buffer.
//
// # Standard interfaces
//
// Conn.NetConn, Listener.NetListener and UDPConn.NetPacketConn return the
// connection as a net.Conn, net.Listener and net.PacketConn, with package
// net's deadline rules instead of a ctx, and File.IO returns the file as
// io.Reader, io.Writer, io.ReaderAt, io.WriterAt, io.Seeker and io.Closer:
// bufio, io.Copy, crypto/tls and net/http (http.Serve on a NetListener)
// work on them, from tasks and from goroutines. golang.org/x/net's
// nettest.TestConn passes for NetConn, over TCP and Unix sockets. NetConn
// is an io.ReaderFrom: io.Copy(netConn, file.IO()) goes through SendFile.
// The other way, an upload, NetConn is an io.WriterTo and FileIO an
// io.ReaderFrom: io.Copy(file.IO(), netConn), and io.Copy of an
// io.LimitReader of the NetConn, splice the connection's bytes into the
// file through a pipe (IORING_OP_SPLICE on the ring, splice(2) elsewhere)
// under the read deadline, as package os does for a *net.TCPConn.
// (*net.Buffers).WriteTo on a NetConn writes one buffer at a time, since
// package net's batching hook is unexported: use Conn.Writev for one
// writev.
//
// # Descriptors and cancellation
//
// Descriptors are guarded: Close shuts sockets down to wake operations in
// flight, closes the fd after the last one finished, and later calls fail
// with net.ErrClosed or fs.ErrClosed; a use after Close never touches a
// reused descriptor number. Cancelling an operation's ctx cancels it in the
// kernel (IORING_OP_ASYNC_CANCEL), and the call returns only once the
// kernel has let go of its buffer. Errors are the standard library's:
// *fs.PathError for files, *net.OpError for sockets, io.EOF at the end,
// with the errno inside (errors.Is(err, syscall.ECONNREFUSED) works).
//
// # Without io_uring
//
// On the portable backend (runtime.BackendPortable, where io_uring is
// refused) a task's socket waits for readiness in its runtime's epoll
// instance (runtime.RegisterFD), and its file operations run as system
// calls on a pool of at most 64 goroutines while the task suspends. A
// read or write of a file opened with O_DIRECT goes to Linux AIO
// (io_submit(2)) instead, at its offset (or at the file position, read and
// moved under the File's position lock), so that no thread waits for the device; what
// io_submit refuses goes to the pool. Once on the device, such an
// operation cannot be cancelled: the call returns when it completes, as
// it does on the pool.
package aio
