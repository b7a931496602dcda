package jit

import "github.com/trampjit/trampjit/btfmodel"

// Kind is a program's attach kind as the gen request spells it.
type Kind = btfmodel.AttachType

// The program kinds a request may attach.
const (
	Fentry = btfmodel.Fentry // BPF_TRACE_FENTRY
	Fexit  = btfmodel.Fexit  // BPF_TRACE_FEXIT
	ModRet = btfmodel.ModRet // BPF_MODIFY_RETURN
	LSM    = btfmodel.LSM    // BPF_LSM_MAC: fmod_ret, or fexit on a void hook
	// Fsession is BPF_TRACE_FSESSION (7.0+): in the fentry and the fexit list at once.
	Fsession = btfmodel.Fsession
	// StructOpsProg is a BPF_PROG_TYPE_STRUCT_OPS program: the one program of a
	// struct_ops image, implementing Request.StructOps' member.
	StructOpsProg = btfmodel.StructOps
)

// StructOps names the ops table member a struct_ops image implements, as
// "tcp_congestion_ops"/"cong_avoid".
type StructOps struct {
	Ops    string `json:"ops"`
	Member string `json:"member"`
}

func (s StructOps) String() string { return s.Ops + "." + s.Member }

// Prog is one attached program of a request, in attach order.
type Prog struct {
	Kind      Kind   `json:"kind"`
	Sleepable bool   `json:"sleepable,omitempty"`
	Cookie    Cookie `json:"cookie,omitempty"`
	FuncIP    bool   `json:"func_ip,omitempty"` // calls bpf_get_func_ip: sets IP_ARG
	// SessionCookie: an fsession program that calls bpf_session_cookie, which gives it a
	// cookie slot in the trampoline's frame.
	SessionCookie bool `json:"session_cookie,omitempty"`
}

// Features are the CPU/config switches that change trampoline bytes.
type Features struct {
	IBT       bool `json:"ibt,omitempty"`        // x86 ENDBR / arm64 BTI landing pads
	Rethunk   bool `json:"rethunk,omitempty"`    // x86 return thunk instead of ret
	CallDepth bool `json:"call_depth,omitempty"` // x86 call-depth accounting
	// Zbb: riscv64 built with CONFIG_RISCV_ISA_ZBB on a CPU with Zbb (rvzbb_enabled, decided
	// at boot): the JIT's sign and zero extensions are single Zbb instructions.
	Zbb bool `json:"zbb,omitempty"`
	// CFI is the boot's control-flow-integrity mode for indirectly called code (a struct_ops
	// image's landing sequence, emit_cfi): "" (none: x86 emits endbr64 when IBT is on),
	// "kcfi" (CONFIG_CFI_CLANG, cfi=kcfi) or "fineibt" (x86 only, cfi=fineibt). Debian
	// builds with GCC have none.
	CFI string `json:"cfi,omitempty"`
	// CFIHash is the kCFI type hash of the member's CFI stub (cfi_get_func_hash(func_addr)):
	// the 32-bit immediate the landing sequence checks.
	CFIHash uint32 `json:"cfi_hash,omitempty"`
}

// The CFI modes of Features.CFI.
const (
	CFINone    = ""
	CFIKCFI    = "kcfi"
	CFIFineIBT = "fineibt"
)

// ProgAddrs are one program's addresses: its struct bpf_prog and its JITed entry.
type ProgAddrs struct {
	Prog    Addr `json:"prog"`
	BPFFunc Addr `json:"bpf_func"`
}

// Addrs are the addresses an image embeds. Zero values mean "use the synthetic layout".
type Addrs struct {
	Image   Addr            `json:"image"`
	Func    Addr            `json:"func"`
	IP      Addr            `json:"ip"`
	IM      Addr            `json:"im,omitempty"`
	Progs   []ProgAddrs     `json:"progs,omitempty"`
	Helpers map[string]Addr `json:"helpers,omitempty"`
}

// Request is a `trampjit gen` request (docs/request-format.md): one image, fully
// determined. It is also the unit of the kernel corpus.
type Request struct {
	Arch     btfmodel.Arch   `json:"arch"`
	Kernel   btfmodel.Kernel `json:"kernel"`
	BTF      string          `json:"btf,omitempty"`
	Func     string          `json:"func,omitempty"`
	Proto    string          `json:"proto,omitempty"`
	Progs    []Prog          `json:"progs"`
	Features Features        `json:"features,omitzero"`
	Addrs    *Addrs          `json:"addrs,omitempty"`
	// Flags overrides the derived BPF_TRAMP_F_* flags, as "0x6" or 6.
	Flags *Addr `json:"flags,omitempty"`
	// Target is "" for a kernel function, or "bpf" when the traced function is a BPF
	// program's (fentry/fexit on a program; arm64 6.1 attaches only to those).
	Target string `json:"target,omitempty"`
	// StructOps makes the request a struct_ops image (BPF_TRAMP_F_INDIRECT where the kernel
	// has it): no traced function, one struct_ops program, addrs without func, ip or im.
	StructOps *StructOps `json:"struct_ops,omitempty"`

	// dir is the directory relative BTF paths are resolved against.
	dir string
}
