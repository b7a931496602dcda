package jit

// A trampoline's stack frame as its image uses it: every slot the JIT reserves, where it is,
// what it holds in the kernel's vocabulary, and which instructions write and read it. Each
// architecture package computes it from its StackLayout and the image it emitted (a Framer),
// so that listings can name the operands that touch a slot and `trampjit frame` can draw it.

// Slot names shared by the architectures (per-slot names add an index or a register:
// "ctx[0] sk", "cookie[1]", "saved rbx", "stack arg 6").
const (
	SlotRetval      = "retval"                // the traced function's or the fmod_ret/struct_ops program's return value
	SlotNrArgs      = "nr_args"               // ctx[-1]: the argument-slot count (7.0+: func_meta)
	SlotIP          = "ip"                    // ctx[-2] with IP_ARG: the traced function's address
	SlotRunCtxSaved = "run_ctx.saved_run_ctx" // struct bpf_tramp_run_ctx
	SlotRunCtxCook  = "run_ctx.cookie"        // struct bpf_tramp_run_ctx.bpf_cookie
	SlotRetAddr     = "return address"        // pushed by the call that entered the image
	SlotSavedFP     = "saved frame pointer"   // rbp / x29 / s0 of the caller
)

// Slot is one slot of a trampoline's frame.
type Slot struct {
	// Name is the slot in the kernel's vocabulary: "ctx[0] sk" (argument slot 0, named after
	// the C parameter it holds), "nr_args", "ip", "retval", "run_ctx.cookie", "saved rbx",
	// "cookie[0]", "stack arg 7" (an outgoing copy of a stack-passed argument), ...
	Name string `json:"name"`
	// Off is the slot's offset from the frame base (Frame.Base), SPOff from the stack
	// pointer once the prologue has set it up; both in bytes, Off usually negative.
	Off   int `json:"off"`
	SPOff int `json:"sp_off"`
	Size  int `json:"size"`
	// Writers and Readers are the image offsets of the instructions that store to and load
	// from the slot (an lea/add that passes its address, as for ctx or run_ctx, is a reader).
	Writers []int `json:"writers,omitempty"`
	Readers []int `json:"readers,omitempty"`
	// Note says what is not obvious: who else reads it (the program through ctx, the
	// __bpf_prog_enter helpers through run_ctx), when it is written.
	Note string `json:"note,omitempty"`
}

// Frame is the stack frame of one image.
type Frame struct {
	Arch string `json:"arch"`
	// Base names the frame base register the offsets are from: "rbp" (x86_64), "x29"
	// (arm64: the frame record the prologue sets up), "s0" (riscv64).
	Base string `json:"base"`
	// Size is the frame's size below the base (what the prologue subtracts from sp, plus
	// the callee-saved spills it pushes), SPBase the base's offset from sp after the
	// prologue.
	Size   int    `json:"size"`
	SPBase int    `json:"sp_base"`
	Slots  []Slot `json:"slots"`
}

// SlotAt returns the slot covering frame-base offset off, or nil.
func (f *Frame) SlotAt(off int) *Slot {
	for i := range f.Slots {
		s := &f.Slots[i]
		if off >= s.Off && off < s.Off+s.Size {
			return s
		}
	}
	return nil
}

// Framer is implemented by backends that can describe an image's frame.
type Framer interface {
	// Frame returns the frame of img, built from t: every slot, with the instructions of img
	// that write and read it.
	Frame(t *Tramp, img *Image) (*Frame, error)
}
