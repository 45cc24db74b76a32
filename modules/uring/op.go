package uring

import "strconv"

// Op is an io_uring opcode (enum io_uring_op). Use Probe.Supported to learn
// whether the running kernel implements one.
type Op uint8

// Opcodes, numbered as in the kernel ABI.
const (
	OpNop Op = iota
	OpReadv
	OpWritev
	OpFsync
	OpReadFixed
	OpWriteFixed
	OpPollAdd
	OpPollRemove
	OpSyncFileRange
	OpSendmsg
	OpRecvmsg
	OpTimeout
	OpTimeoutRemove
	OpAccept
	OpAsyncCancel
	OpLinkTimeout
	OpConnect
	OpFallocate
	OpOpenat
	OpClose
	OpFilesUpdate
	OpStatx
	OpRead
	OpWrite
	OpFadvise
	OpMadvise
	OpSend
	OpRecv
	OpOpenat2
	OpEpollCtl
	OpSplice
	OpProvideBuffers
	OpRemoveBuffers
	OpTee
	OpShutdown
	OpRenameat
	OpUnlinkat
	OpMkdirat
	OpSymlinkat
	OpLinkat
	OpMsgRing
	OpFsetxattr
	OpSetxattr
	OpFgetxattr
	OpGetxattr
	OpSocket
	OpUringCmd
	OpSendZC
	OpSendmsgZC
)

var opNames = [...]string{
	OpNop: "nop", OpReadv: "readv", OpWritev: "writev", OpFsync: "fsync",
	OpReadFixed: "read_fixed", OpWriteFixed: "write_fixed", OpPollAdd: "poll_add",
	OpPollRemove: "poll_remove", OpSyncFileRange: "sync_file_range",
	OpSendmsg: "sendmsg", OpRecvmsg: "recvmsg", OpTimeout: "timeout",
	OpTimeoutRemove: "timeout_remove", OpAccept: "accept",
	OpAsyncCancel: "async_cancel", OpLinkTimeout: "link_timeout",
	OpConnect: "connect", OpFallocate: "fallocate", OpOpenat: "openat",
	OpClose: "close", OpFilesUpdate: "files_update", OpStatx: "statx",
	OpRead: "read", OpWrite: "write", OpFadvise: "fadvise", OpMadvise: "madvise",
	OpSend: "send", OpRecv: "recv", OpOpenat2: "openat2", OpEpollCtl: "epoll_ctl",
	OpSplice: "splice", OpProvideBuffers: "provide_buffers",
	OpRemoveBuffers: "remove_buffers", OpTee: "tee", OpShutdown: "shutdown",
	OpRenameat: "renameat", OpUnlinkat: "unlinkat", OpMkdirat: "mkdirat",
	OpSymlinkat: "symlinkat", OpLinkat: "linkat", OpMsgRing: "msg_ring",
	OpFsetxattr: "fsetxattr", OpSetxattr: "setxattr", OpFgetxattr: "fgetxattr",
	OpGetxattr: "getxattr", OpSocket: "socket", OpUringCmd: "uring_cmd",
	OpSendZC: "send_zc", OpSendmsgZC: "sendmsg_zc",
}

// String returns the kernel's name for the opcode without the IORING_OP_
// prefix, in lower case, or "op(N)" for an opcode this package has no name for.
func (op Op) String() string {
	if int(op) < len(opNames) {
		return opNames[op]
	}
	return "op(" + strconv.Itoa(int(op)) + ")"
}
