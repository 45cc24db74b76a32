package uring

// Values in this file are transcribed from the kernel ABI
// (include/uapi/linux/io_uring.h); golang.org/x/sys/unix has the system call
// numbers but none of the IORING_* constants.

// Setup flags for Params.Flags, passed to io_uring_setup unchanged.
//
// SetupSingleIssuer and SetupDeferTaskrun bind the ring to the OS thread
// that first submits: from Go, only a goroutine that holds
// runtime.LockOSThread for the ring's whole life may use such a ring (other
// threads get EEXIST). With SetupDeferTaskrun, completions are posted only
// when that thread enters the kernel to get events, and with
// SetupCoopTaskrun at its next entry for any reason; add SetupTaskrunFlag so
// that PeekCQE, PeekBatch and ForEachCQE can see when to enter.
const (
	SetupIOPoll        uint32 = 1 << 0  // busy-poll for completions (O_DIRECT files only)
	SetupSQPoll        uint32 = 1 << 1  // a kernel thread polls the SQ; see Params.SQThreadIdle
	SetupSQAff         uint32 = 1 << 2  // pin the SQ poll thread to Params.SQThreadCPU
	SetupCQSize        uint32 = 1 << 3  // Params.CQEntries is valid (set automatically when it is non-zero)
	SetupClamp         uint32 = 1 << 4  // clamp oversized entry counts instead of failing with EINVAL
	SetupAttachWQ      uint32 = 1 << 5  // share the async worker pool of Params.WQFd
	SetupRDisabled     uint32 = 1 << 6  // start disabled until Ring.Enable
	SetupSubmitAll     uint32 = 1 << 7  // keep submitting a batch after an SQE fails to prepare
	SetupCoopTaskrun   uint32 = 1 << 8  // run completion work at the next kernel entry, no IPI
	SetupTaskrunFlag   uint32 = 1 << 9  // flag pending completion work in the SQ ring (see PeekCQE)
	SetupSQE128        uint32 = 1 << 10 // 128-byte SQEs: refused by New
	SetupCQE32         uint32 = 1 << 11 // 32-byte CQEs: refused by New
	SetupSingleIssuer  uint32 = 1 << 12 // only the creating thread may submit
	SetupDeferTaskrun  uint32 = 1 << 13 // completion work runs only when the issuer waits; needs SetupSingleIssuer
	setupUnsupportedBy        = SetupSQE128 | SetupCQE32
	// setupKnown are the flags above. New refuses later ones, which may
	// change the layout it maps: with IORING_SETUP_NO_SQARRAY (1<<16) the
	// kernel has no SQ index array, and filling the one New expects would
	// overwrite the ring's head, tail and sizes.
	setupKnown uint32 = 1<<14 - 1
)

// Feature bits reported by the kernel in Params.Features and Ring.Features.
const (
	FeatSingleMmap     uint32 = 1 << 0  // SQ and CQ rings share one mapping
	FeatNoDrop         uint32 = 1 << 1  // CQEs that do not fit are held back, not dropped
	FeatSubmitStable   uint32 = 1 << 2  // data for async offload is consumed at submit time
	FeatRWCurPos       uint32 = 1 << 3  // offset ^uint64(0) means "current file position"
	FeatCurPersonality uint32 = 1 << 4  // requests run with the submitter's credentials
	FeatFastPoll       uint32 = 1 << 5  // internal poll instead of async threads for sockets
	FeatPoll32Bits     uint32 = 1 << 6  // PollAdd takes 32-bit event masks
	FeatSQPollNonfixed uint32 = 1 << 7  // SQPOLL works without registered files
	FeatExtArg         uint32 = 1 << 8  // io_uring_enter takes a timeout (used by WaitCQE)
	FeatNativeWorkers  uint32 = 1 << 9  // async workers are threads of this process
	FeatRsrcTags       uint32 = 1 << 10 // registered resources can be tagged
	FeatCQESkip        uint32 = 1 << 11 // SQECQESkipSuccess is honoured
	FeatLinkedFile     uint32 = 1 << 12 // linked requests resolve their file when they run
)

// SQE flags for SQE.Flags and SQE.SetFlags.
const (
	SQEFixedFile      uint8 = 1 << 0 // Fd is an index into the files registered with RegisterFiles
	SQEDrain          uint8 = 1 << 1 // start only after every earlier SQE has completed
	SQELink           uint8 = 1 << 2 // the next SQE starts only after this one succeeds
	SQEIOHardlink     uint8 = 1 << 3 // like SQELink, but the chain continues on failure
	SQEAsync          uint8 = 1 << 4 // go straight to an async worker, skip the inline attempt
	SQEBufferSelect   uint8 = 1 << 5 // pick a buffer from group SQE.BufIndex (provided buffers)
	SQECQESkipSuccess uint8 = 1 << 6 // post no CQE when the request succeeds
)

// CQE flags, found in CQE.Flags.
const (
	CQEFBuffer       uint32 = 1 << 0 // the upper 16 bits of Flags hold a provided-buffer ID
	CQEFMore         uint32 = 1 << 1 // a multishot request will post more CQEs
	CQEFSockNonempty uint32 = 1 << 2 // the socket had more data after this receive
	CQEFNotif        uint32 = 1 << 3 // zero-copy send notification
	cqeBufferShift          = 16
)

// Flags for PrepFsync.
const (
	FsyncDataSync uint32 = 1 << 0 // fdatasync: skip metadata not needed to read the data back
)

// Flags for PrepSplice and PrepTee, besides unix.SPLICE_F_MOVE,
// SPLICE_F_NONBLOCK and SPLICE_F_MORE, which go to splice(2) unchanged.
const (
	SpliceFdInFixed uint32 = 1 << 31 // the input descriptor is a registered-file index
)

// Flags for PrepTimeout, PrepLinkTimeout and PrepTimeoutRemove.
const (
	TimeoutAbs        uint32 = 1 << 0 // the timespec is an absolute time, not a duration
	TimeoutUpdate     uint32 = 1 << 1 // PrepTimeoutRemove updates instead of removing
	TimeoutBoottime   uint32 = 1 << 2 // measure against CLOCK_BOOTTIME
	TimeoutRealtime   uint32 = 1 << 3 // measure against CLOCK_REALTIME
	LinkTimeoutUpdate uint32 = 1 << 4 // PrepTimeoutRemove updates a linked timeout
	TimeoutETimeOK    uint32 = 1 << 5 // expiry (still -ETIME) does not fail the request: links after it run
	timeoutMultishot  uint32 = 1 << 6 // IORING_TIMEOUT_MULTISHOT: fires repeatedly (see SQE.Multishot)
)

// Flags for PrepAsyncCancel and PrepAsyncCancelFd.
const (
	CancelAll     uint32 = 1 << 0 // cancel every match, not just the first
	CancelFd      uint32 = 1 << 1 // match on the file descriptor (set by PrepAsyncCancelFd)
	CancelAny     uint32 = 1 << 2 // match any request
	CancelFdFixed uint32 = 1 << 3 // the descriptor is a registered-file index
)

// RecvSendPollFirst, OR-ed into SQE.IoPrio of a send or recv, arms the
// readiness poll first instead of trying the transfer once: cheaper when the
// socket is known to have no data (or no room) yet.
const RecvSendPollFirst uint16 = 1 << 0

// Flags kept in SQE.IoPrio, set by the multishot Prep methods.
const (
	recvMultishot   uint16 = 1 << 1
	acceptMultishot uint16 = 1 << 0
)

// Poll request flags, kept in SQE.Len: PrepPollMultishot sets PollAddMulti;
// OR in PollAddLevel afterwards for level-triggered reports.
const (
	PollAddMulti uint32 = 1 << 0 // multishot poll: one CQE per readiness edge, CQEFMore set
	PollAddLevel uint32 = 1 << 3 // level-triggered multishot poll
)

// io_uring_enter flags.
const (
	enterGetEvents uint32 = 1 << 0
	enterSQWakeup  uint32 = 1 << 1
	enterSQWait    uint32 = 1 << 2
	enterExtArg    uint32 = 1 << 3
)

// SQ ring flags, written by the kernel.
const (
	sqNeedWakeup uint32 = 1 << 0
	sqCQOverflow uint32 = 1 << 1
	sqTaskrun    uint32 = 1 << 2
)

// mmap offsets selecting which ring a mapping of the ring fd returns.
const (
	offSQRing int64 = 0
	offCQRing int64 = 0x8000000
	offSQEs   int64 = 0x10000000
)

// io_uring_register opcodes.
const (
	registerBuffers      = 0
	unregisterBuffers    = 1
	registerFiles        = 2
	unregisterFiles      = 3
	registerEventFd      = 4
	unregisterEventFd    = 5
	registerFilesUpdate  = 6
	registerEventFdAsync = 7
	registerProbe        = 8
	registerEnableRings  = 12
	registerIOWQMax      = 19 // IORING_REGISTER_IOWQ_MAX_WORKERS
)

const (
	probeOpSupported = 1 << 0 // IO_URING_OP_SUPPORTED in io_uring_probe_op.flags
	maxProbeOps      = 256    // opcodes fit in a byte

	// sizeof(struct io_uring_getevents_arg), and the signal set size that
	// goes in it. The kernel reads the size only along with a signal mask,
	// which this package never passes; it is set as liburing sets it.
	getEventsArgSize = 24
	sigsetSize       = 8
)
