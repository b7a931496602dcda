package jit

import "github.com/trampjit/trampjit/btfmodel"

// ProgRef is one program as a backend emits it: its request entry, where it stood in attach
// order, and its addresses.
type ProgRef struct {
	Prog
	Index   int    // 1-based position in the request's attach order ("prog#1")
	Addr    uint64 // struct bpf_prog *
	BPFFunc uint64 // JITed entry
	// CookieSlot is an fsession program's session-cookie slot when it calls
	// bpf_session_cookie: 0 for the first such program in emission order; -1 otherwise. The
	// program's fentry and fexit blocks use the same slot (see FuncMeta).
	CookieSlot int
}

// Tramp is a fully resolved trampoline: everything a backend needs to emit one image, and
// nothing it has to look up. Program lists are in emission order (within a kind the most
// recently attached program first, as bpf_trampoline_get_progs walks its hlist). An fsession
// program is in Fentry and in Fexit.
type Tramp struct {
	Arch     btfmodel.Arch
	Kernel   btfmodel.Kernel
	Model    *btfmodel.FuncModel
	Flags    Flags
	Features Features
	Fentry   []ProgRef
	ModRet   []ProgRef
	Fexit    []ProgRef
	// Fsessions and CookieSlots are bpf_fsession_cnt and bpf_fsession_cookie_cnt: the
	// fsession programs, and those of them that call bpf_session_cookie.
	Fsessions   int
	CookieSlots int
	Image       uint64            // address the image executes at
	Func        uint64            // traced function's symbol address (func_addr)
	IP          uint64            // the patched call site inside it
	IM          uint64            // struct bpf_tramp_image *
	Helpers     map[string]uint64 // kernel symbol -> address
	// ProgTarget says the traced function is a BPF program (fentry/fexit/fmod_ret on a
	// program), not a kernel function: arm64 6.1 can attach only to those.
	ProgTarget bool
	// StructOps is set for a struct_ops image (bpf_struct_ops_prepare_trampoline): its one
	// program is Fentry[0], Flags are the member's (INDIRECT where the kernel has it,
	// RET_FENTRY_RET for a non-void member), and Func, IP and IM are zero: the image is
	// entered by an indirect call through the ops table and calls no original function.
	StructOps *StructOps
}

// Helper returns a kernel helper's address, or an error naming the missing symbol.
func (t *Tramp) Helper(name string) (uint64, error) {
	if a, ok := t.Helpers[name]; ok {
		return a, nil
	}
	return 0, &MissingHelperError{Name: name}
}

// MissingHelperError says a request's addrs lack a helper the profile calls.
type MissingHelperError struct{ Name string }

func (e *MissingHelperError) Error() string {
	return "addrs.helpers has no address for " + e.Name + ", which this profile calls"
}

// EnterExit names the __bpf_prog_enter*/exit* pair the trampoline calls around a program, as
// bpf_trampoline_enter/exit (kernel/bpf/trampoline.c) pick them: TRACING programs use the
// _recur variants, LSM programs the plain ones. Debian's 6.1.176 has the same table (the
// kernel corpus shows __bpf_prog_enter_recur on 6.1), not 6.1.0's inline choice.
//
// struct_ops programs are not "recur" either (bpf_prog_check_recur is true only for TRACING
// programs other than iterators).
func EnterExit(k btfmodel.Kernel, p Prog) (enter, exit string) {
	recur := p.Kind != LSM && p.Kind != StructOpsProg
	switch {
	case p.Sleepable && recur:
		return "__bpf_prog_enter_sleepable_recur", "__bpf_prog_exit_sleepable_recur"
	case p.Sleepable:
		return "__bpf_prog_enter_sleepable", "__bpf_prog_exit_sleepable"
	case recur:
		return "__bpf_prog_enter_recur", "__bpf_prog_exit_recur"
	}
	return "__bpf_prog_enter", "__bpf_prog_exit"
}

// Trampoline enter/exit helpers called when CALL_ORIG is set.
const (
	HelperTrampEnter = "__bpf_tramp_enter"
	HelperTrampExit  = "__bpf_tramp_exit"
)

// Backend emits images for one architecture.
type Backend interface {
	Arch() btfmodel.Arch
	// Generate emits the image for t, or fails with the kernel's reason (for example the
	// arch JIT's -ENOTSUPP for too many argument registers).
	Generate(t *Tramp) (*Image, error)
}
