package jit

// Section names used by both backends' listings, in the order a trampoline emits them.
const (
	SecPrologue    = "prologue"
	SecArgSpill    = "arg spill"
	SecNrArgs      = "nr_args"
	SecIP          = "ip"
	SecTrampEnter  = "tramp_enter"
	SecSession     = "fsession setup" // cookie slots and the return value zeroed
	SecIsReturn    = "is_return"      // func_meta with is_return, before the fexit blocks
	SecModRetInit  = "fmod_ret setup" // the return value zeroed once before the fmod_ret programs
	SecCallOrig    = "call original"
	SecRetval      = "retval stash"
	SecIPAfterCall = "ip_after_call" // im->ip_after_call: the NOPs bpf_tramp_image_put patches
	SecTrampExit   = "tramp_exit"
	SecEpilogue    = "epilogue"
)

// SecFentry, SecModRet, SecFexit and SecStructOps name the per-program sections by the list
// the program runs from and its attach index ("fentry 1", "fmod_ret 2", "fexit 3"; an
// fsession program has a "fentry N" and a "fexit N" block; a struct_ops image's one program
// is "struct_ops 1").
func SecFentry(n int) string    { return "fentry " + itoa(n) }
func SecModRet(n int) string    { return "fmod_ret " + itoa(n) }
func SecFexit(n int) string     { return "fexit " + itoa(n) }
func SecStructOps(n int) string { return "struct_ops " + itoa(n) }

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Section is a named byte range [Start, End) of an image.
type Section struct {
	Name  string `json:"name"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	// Data: the bytes are not code (a kCFI type-hash word before a struct_ops image);
	// listings print them as 32-bit words instead of decoding them.
	Data bool `json:"data,omitempty"`
}

// RelocKind says how a symbol's address is embedded at a relocation's offset.
type RelocKind string

const (
	RelocRel32  RelocKind = "rel32"  // x86 call/jmp rel32, relative to the next instruction
	RelocImm32  RelocKind = "imm32"  // 32-bit immediate
	RelocImm64  RelocKind = "imm64"  // 64-bit immediate (x86 movabs, or an arm64 mov sequence)
	RelocBranch RelocKind = "branch" // arm64 bl imm26
)

// Reloc records that the bytes at Offset refer to Symbol ("im", "prog#1", "bpf_func#1",
// "func", "ip_after_call", or a helper name such as "__bpf_prog_enter_recur").
type Reloc struct {
	Offset int       `json:"offset"`
	Kind   RelocKind `json:"kind"`
	Symbol string    `json:"symbol"`
}

// Image is a generated trampoline: the code bytes up to the kernel's end of code, the address
// they execute at, and the annotations a listing needs.
type Image struct {
	Arch     string    `json:"arch"`
	Kernel   string    `json:"kernel"`
	Base     uint64    `json:"-"`
	Flags    Flags     `json:"-"`
	Code     []byte    `json:"-"`
	Sections []Section `json:"sections"`
	Relocs   []Reloc   `json:"relocs"`
}
