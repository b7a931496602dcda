package verifier

import (
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
)

// Dynptrs on the stack (STACK_DYNPTR, kernel/bpf/verifier.c): a struct bpf_dynptr is 16
// bytes of stack that a constructor initialises (bpf_dynptr_from_mem: local;
// bpf_ringbuf_reserve_dynptr: ringbuf, with a reference; the bpf_dynptr_from_skb kfunc:
// skb; bpf_dynptr_clone: the source's kind and reference) and that the dynptr helpers and
// kfuncs then take as an initialised argument (process_dynptr_func). A ring buffer dynptr
// is released by bpf_ringbuf_submit_dynptr/discard_dynptr; one left at the exit is an
// unreleased reference. The slots are kept beside the stack bytes (state.dynptrs): the
// bytes themselves are misc to the rest of the model.

type dynptrKind int

const (
	dynptrLocal dynptrKind = iota + 1
	dynptrRingbuf
	dynptrSkb
)

func (k dynptrKind) String() string {
	switch k {
	case dynptrLocal:
		return "local"
	case dynptrRingbuf:
		return "ringbuf"
	case dynptrSkb:
		return "skb"
	}
	return "<unknown>"
}

// dynptrSlot is one initialised dynptr: the frame and fp offset of its first byte.
type dynptrSlot struct {
	frame, off int
	kind       dynptrKind
	ref        uint32
}

const dynptrSize = 16

const (
	helperDynptrFromMem    = 197
	helperRingbufReserveDP = 198
	helperRingbufSubmitDP  = 199
	helperRingbufDiscardDP = 200
	helperDynptrRead       = 201
	helperDynptrWrite      = 202
	helperDynptrData       = 203
	helperDynptrFirst      = helperDynptrFromMem
	helperDynptrLast       = helperDynptrData
	dynptrArgUninit        = true
	dynptrArgInit          = false
)

// dynptrAt is the dynptr whose first byte is at the stack pointer r (nil: none).
func (c *checker) dynptrAt(r *reg) (*dynptrSlot, int) {
	off := int(r.off) + int(int64(r.v.val()))
	for i := range c.st.dynptrs {
		d := &c.st.dynptrs[i]
		if d.frame == int(r.frameno) && d.off == off {
			return d, i
		}
	}
	return nil, -1
}

// dynptrOverlap is the index of a dynptr overlapping [off, off+size) of frame (-1: none).
func (c *checker) dynptrOverlap(frame, off, size int) int {
	for i, d := range c.st.dynptrs {
		if d.kind != 0 && d.frame == frame && off < d.off+dynptrSize && d.off < off+size {
			return i
		}
	}
	return -1
}

func (c *checker) dynptrArgMsg(regno uint8, f string) {
	if c.has(btfmodel.CapVerifierKfuncRegMsg) { // 7.2 names the register
		c.logf(f+" as R%d", regno)
		return
	}
	c.logf(f+" as arg #%d", int(regno)-1)
}

// dynptrArg is process_dynptr_func for the dynptr at register regno: uninit, the slot a
// constructor of kind initialises (ref its reference); otherwise an initialised dynptr,
// of kind want when set, released when release.
func (c *checker) dynptrArg(regno uint8, uninit bool, kind dynptrKind, ref uint32, want dynptrKind, release bool) error {
	r := c.st.regs[regno]
	if r.typ != ptrToStack {
		c.logf("R%d type=%s expected=fp", regno, regTypeStr(c.env.Kernel, &r))
		return reject("EACCES")
	}
	if !r.v.isConst() {
		c.logf("dynptr has to be at a constant offset")
		return reject("EINVAL")
	}
	off := int(r.off) + int(int64(r.v.val()))
	if off%regSize != 0 {
		c.logf("cannot pass in dynptr at an offset=%d", off)
		return reject("EINVAL")
	}
	if release && !c.has(btfmodel.CapVerifierDynptrReleaseMsg) {
		// 6.1/6.12 check_func_arg: only a referenced dynptr may be released
		if d, _ := c.dynptrAt(&r); d == nil || d.ref == 0 {
			c.logf("arg %d is an unacquired reference", regno)
			return reject("EINVAL")
		}
	}
	if uninit {
		if _, g := c.dynptrAt(&r); g >= 0 && c.st.dynptrs[g].kind == 0 { // a 6.1 ghost goes
			c.st.dynptrs = append(c.st.dynptrs[:g:g], c.st.dynptrs[g+1:]...)
		}
		if i := c.dynptrOverlap(int(r.frameno), off, dynptrSize); i >= 0 {
			d := c.st.dynptrs[i]
			switch {
			case !c.has(btfmodel.CapVerifierDynptrOverwrite):
				c.logf("Dynptr has to be an uninitialized dynptr")
				return reject("EINVAL")
			case d.ref != 0:
				c.logf("cannot overwrite referenced dynptr")
				return reject("EINVAL")
			}
			c.st.dynptrs = append(c.st.dynptrs[:i:i], c.st.dynptrs[i+1:]...)
		}
		c.fr = c.st.frameAt(int(r.frameno))
		c.updateStackDepth(off)
		c.growStack(off)
		for b := off; b < off+dynptrSize; b++ {
			c.fr.stack[slotIndex(b)] = stackMisc
		}
		c.fr = nil
		c.st.dynptrs = append(c.st.dynptrs, dynptrSlot{frame: int(r.frameno), off: off, kind: kind, ref: ref})
		return nil
	}
	d, i := c.dynptrAt(&r)
	if d == nil || d.kind == 0 {
		c.dynptrArgMsg(regno, "Expected an initialized dynptr")
		return reject("EINVAL")
	}
	if want != 0 && d.kind != want {
		c.dynptrArgMsg(regno, "Expected a dynptr of type "+want.String())
		return reject("EINVAL")
	}
	if release { // release_reference: the dynptr and its clones go with the reference
		id := d.ref
		_ = i
		kept := c.st.dynptrs[:0:0]
		for _, o := range c.st.dynptrs {
			if o.ref != id {
				kept = append(kept, o)
			}
		}
		c.st.dynptrs = kept
		c.releaseRef(id)
	}
	return nil
}

// dynptrsafe is stacksafe's STACK_DYNPTR part: the same dynptrs at the same slots (their
// references are compared by refsafe).
func dynptrsafe(old, cur *state) bool {
	if len(old.dynptrs) != len(cur.dynptrs) {
		return false
	}
	for i, o := range old.dynptrs {
		n := cur.dynptrs[i]
		if o.frame != n.frame || o.off != n.off || o.kind != n.kind || (o.ref == 0) != (n.ref == 0) {
			return false
		}
	}
	return true
}

// dynptrHelperCall checks the dynptr helpers' arguments (bpf_dynptr_*_proto,
// kernel/bpf/helpers.c and ringbuf.c) and sets R0.
func (c *checker) dynptrHelperCall(id int32, name string) error {
	meta := helperMeta{mapIdx: -1}
	proto := helperProto{}
	arg := func(regno uint8, a argKind) error { return c.helperArg(regno, a, &proto, &meta, id, name) }
	var err error
	switch id {
	case helperDynptrFromMem: // data, size, flags, ptr (local, uninit)
		if err = arg(1, argUninitMem); err == nil {
			if err = arg(2, argConstSizeOrZero); err == nil {
				err = c.dynptrArg(4, dynptrArgUninit, dynptrLocal, 0, 0, false)
			}
		}
	case helperRingbufReserveDP: // map, size, flags, ptr (ringbuf, uninit): a reference
		if err = arg(1, argConstMap); err == nil {
			err = c.dynptrArg(4, dynptrArgUninit, dynptrRingbuf, c.acquireRef(), 0, false)
		}
	case helperRingbufSubmitDP, helperRingbufDiscardDP: // ptr (ringbuf, release), flags
		err = c.dynptrArg(1, dynptrArgInit, 0, 0, dynptrRingbuf, true)
	case helperDynptrRead: // dst, len, src (rdonly), offset, flags
		if err = arg(1, argUninitMem); err == nil {
			if err = arg(2, argConstSizeOrZero); err == nil {
				err = c.dynptrArg(3, dynptrArgInit, 0, 0, 0, false)
			}
		}
	case helperDynptrWrite: // dst (rdonly), offset, src, len, flags
		if err = c.dynptrArg(1, dynptrArgInit, 0, 0, 0, false); err == nil {
			if err = arg(3, argMem); err == nil {
				err = arg(4, argConstSizeOrZero)
			}
		}
	case helperDynptrData: // ptr (rdonly), offset, len (a known constant)
		if err = c.dynptrArg(1, dynptrArgInit, 0, 0, 0, false); err == nil {
			err = arg(3, argAllocSize)
		}
	}
	if err != nil {
		return err
	}
	if id == helperDynptrFromMem && c.st.regs[1].typ != ptrToMapValue { // check_helper_call
		c.logf("Unsupported reg type %s for bpf_dynptr_from_mem data", regTypeStr(c.env.Kernel, &c.st.regs[1]))
		return reject("EACCES")
	}
	c.clobberCallerSaved()
	switch id {
	case helperRingbufSubmitDP, helperRingbufDiscardDP:
		c.st.regs[0] = reg{}
		c.scratch[0] = true
	case helperDynptrData: // RET_PTR_TO_DYNPTR_MEM_OR_NULL
		c.setReg(0, reg{typ: ptrToMem, flags: flagMaybeNull, memSize: meta.allocSize, v: constScalar(0), id: c.newID()})
	default:
		c.setReg(0, mkScalar(unknownScalar()))
	}
	return c.mapFuncCompat(meta.mapIdx, id, &proto, name)
}

// kfuncDynptrArg is process_dynptr_func for a kfunc's struct bpf_dynptr argument (a
// "__uninit" one is a constructor's: bpf_dynptr_from_skb, bpf_dynptr_clone).
func (c *checker) kfuncDynptrArg(kfunc string, regno uint8, param string, first *dynptrSlot) error {
	if strings.HasSuffix(param, "__uninit") || kfunc == "bpf_dynptr_from_skb" && regno == 3 {
		kind, ref := dynptrSkb, uint32(0)
		if first != nil { // bpf_dynptr_clone: the source's kind and reference
			kind, ref = first.kind, first.ref
		}
		return c.dynptrArg(regno, dynptrArgUninit, kind, ref, 0, false)
	}
	return c.dynptrArg(regno, dynptrArgInit, 0, 0, 0, false)
}

// dynptrOf is the dynptr register regno points to (nil: none), for a clone's source.
func (c *checker) dynptrOf(regno uint8) *dynptrSlot {
	r := c.st.regs[regno]
	if r.typ != ptrToStack || !r.v.isConst() {
		return nil
	}
	d, _ := c.dynptrAt(&r)
	if d == nil {
		return nil
	}
	cp := *d
	return &cp
}

// dynptrStackAccess is the program's own loads and stores on a dynptr's bytes: a load is
// refused (check_stack_read_fixed_off: not spill, misc or zero), a store destroys the
// dynptr (destroy_if_dynptr_stack_slot; 6.12 and 7.2 refuse it on a referenced one).
func (c *checker) dynptrStackAccess(frame, lo, hi int, write bool) error {
	i := c.dynptrOverlap(frame, lo, hi-lo)
	if i < 0 {
		return nil
	}
	d := c.st.dynptrs[i]
	if !write {
		c.logf("invalid read from stack off %d+%d size %d", lo, max(d.off-lo, 0), hi-lo)
		return reject("EACCES")
	}
	if !c.has(btfmodel.CapVerifierDynptrOverwrite) {
		// 6.1: the bytes become misc but the slot keeps its id, so a release still finds
		// a reference there and then an uninitialised dynptr
		c.st.dynptrs[i].kind = 0
		return nil
	}
	if d.ref != 0 {
		c.logf("cannot overwrite referenced dynptr")
		return reject("EINVAL")
	}
	c.st.dynptrs = append(c.st.dynptrs[:i:i], c.st.dynptrs[i+1:]...)
	return nil
}
