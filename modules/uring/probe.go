package uring

import "unsafe"

// Probe records which opcodes the running kernel implements, as reported by
// IORING_REGISTER_PROBE. It is a snapshot: a value, safe to share.
type Probe struct {
	lastOp    Op
	supported [maxProbeOps]bool
}

// probeBuf is struct io_uring_probe followed by its ops array.
type probeBuf struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
	ops    [maxProbeOps]probeOp
}

// probeOp is struct io_uring_probe_op.
type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

// Probe asks the kernel which opcodes it supports (kernel 5.6+; older
// kernels fail with EINVAL).
func (r *Ring) Probe() (*Probe, error) {
	var buf probeBuf // the kernel insists on zeroed memory
	if _, err := r.register("probe", registerProbe, unsafe.Pointer(&buf), maxProbeOps); err != nil {
		return nil, err
	}
	p := &Probe{lastOp: Op(buf.lastOp)}
	for _, o := range buf.ops[:buf.opsLen] {
		if o.flags&probeOpSupported != 0 {
			p.supported[o.op] = true
		}
	}
	return p, nil
}

// Supported reports whether the kernel implements op.
func (p *Probe) Supported(op Op) bool { return p.supported[op] }

// LastOp returns the highest opcode the kernel knows.
func (p *Probe) LastOp() Op { return p.lastOp }
