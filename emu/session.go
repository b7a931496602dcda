package emu

import (
	"github.com/trampjit/trampjit/jit"
)

// fsession (BPF_TRACE_FSESSION, 7.0+): one program runs on entry and on exit. With one
// attached, ctx[-1] is func_meta rather than the bare argument count: bits 0-7 the slot
// count, bits 8-15 a cookie index, bit 63 is_return (bpf_session_is_return). Each program
// that calls bpf_session_cookie has an 8-byte slot at ctx - 8*index, zeroed after
// __bpf_tramp_enter; what it stores there on entry it reads back on exit. The stubs play
// such a program: on entry (bit 63 clear) they store sessionMark into the slot the index
// names, and the oracle expects the slot to hold 0 on entry and the mark on exit.

const (
	metaIndexShift = 8 // BPF_TRAMP_COOKIE_INDEX_SHIFT
	metaIsReturn   = uint64(1) << 63
)

// sessionMark is what program i's stub stores into its session cookie on entry.
func sessionMark(i int) uint64 { return 0x5e55_1011_0000_0000 | uint64(i+1)*0x0101 }

// sessionCookie reports whether p calls bpf_session_cookie.
func sessionCookie(p jit.Prog) bool { return p.Kind == jit.Fsession && p.SessionCookie }

// sessionMeta follows the func_meta word through a call as the kernel stores it: the slot
// count before the first block; nr_args | index<<8 before each cookie program's block;
// nr_args | is_return once at do_fexit (after the original and the fmod_ret checks), then
// again with the index before each cookie program's exit block. Blocks without a cookie
// store nothing and see what the previous store left.
type sessionMeta struct {
	any   bool // an fsession program is attached
	nregs uint64
	meta  uint64
	ret   uint64 // metaIsReturn once do_fexit is passed
	index map[int]int
}

// newSessionMeta gives each cookie program its index. The slots lie below ctx[-1] and the
// IP slot (IP_ARG); the oldest cookie program's is nearest, so index = 2 (+1 with IP_ARG)
// + the number of cookie programs attached before it (the newest, run first, gets the
// highest: the x86 and arm64 JITs count down from the far end in list order).
func newSessionMeta(req *jit.Request, nregs int, ipArg bool) *sessionMeta {
	s := &sessionMeta{nregs: uint64(nregs), meta: uint64(nregs), index: map[int]int{}}
	base := 2
	if ipArg {
		base++
	}
	for i, p := range req.Progs {
		s.any = s.any || p.Kind == jit.Fsession
		if sessionCookie(p) {
			s.index[i] = base + len(s.index)
		}
	}
	return s
}

func (s *sessionMeta) returning() {
	if s.any && s.ret == 0 {
		s.ret = metaIsReturn
		s.meta = s.nregs | s.ret
	}
}

// before is the store ahead of program i's block.
func (s *sessionMeta) before(i int, p jit.Prog) {
	if sessionCookie(p) {
		s.meta = s.nregs | uint64(s.index[i])<<metaIndexShift | s.ret
	}
}

func (s *sessionMeta) cookie(p jit.Prog) bool { return s.any && sessionCookie(p) }

// sessionRun is what the hook of a cookie program does with its slot: read it, and on
// entry store the mark. It returns the value found.
func (l *Loaded) sessionRun(prog int, ctx, meta uint64) uint64 {
	slot := ctx - 8*(meta>>metaIndexShift&0xff)
	v, _ := l.h.word(slot)
	if meta&metaIsReturn == 0 && slot >= stackBase && slot+8 <= stackBase+stackSize {
		putU64(l.h.stack[slot-stackBase:], sessionMark(prog))
	}
	return v
}
