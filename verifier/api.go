package verifier

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// Program is one BPF program as handed to BPF_PROG_LOAD.
type Program struct {
	Name    string
	Section string // "fentry/tcp_v4_connect", "lsm.s/file_open", ...; fills the fields below when set
	// AttachType, Target and Sleepable: from Section unless set explicitly. Target is the BTF
	// function name (for LSM the bpf_lsm_ hook, e.g. "bpf_lsm_file_open"); for struct_ops
	// the ops table and member, "tcp_congestion_ops:cong_avoid".
	AttachType   btfmodel.AttachType
	Target       string
	Sleepable    bool
	License      string
	Maps         []Map
	Instructions asm.Instructions
}

// Map describes a map the program references. A ld_imm64 with BPF_PSEUDO_MAP_FD or
// BPF_PSEUDO_MAP_VALUE names it by symbol (the reference cilium's ELF loader records, e.g.
// "counts" or ".rodata") or, without one, by its index in Program.Maps in the immediate.
type Map struct {
	Name       string `json:"name"`
	Type       string `json:"type"` // enum bpf_map_type without BPF_MAP_TYPE_, lower case: "hash", "percpu_array", "ringbuf", "task_storage", ...
	KeySize    uint32 `json:"key_size"`
	ValueSize  uint32 `json:"value_size"`
	MaxEntries uint32 `json:"max_entries"`
	// ReadOnly is BPF_F_RDONLY_PROG (libbpf sets it on .rodata): the program may not write.
	ReadOnly bool `json:"read_only,omitempty"`
	// Data is the map's initial value (key 0 of an array: a data section's bytes; shorter
	// than ValueSize means zeros after it), and Frozen says it was frozen (BPF_MAP_FREEZE,
	// as libbpf does to .rodata and .kconfig). A read-only frozen array is a constant for the
	// verifier (rodata.go).
	Data   []byte `json:"data,omitempty"`
	Frozen bool   `json:"frozen,omitempty"`
	// Key and Value are the map's key and value BTF (btf_key_type_id, btf_value_type_id),
	// nil when the map is created without BTF: local storage maps need them, and a
	// struct bpf_spin_lock in the value is found through Value (btf_parse_fields).
	Key   btf.Type `json:"-"`
	Value btf.Type `json:"-"`
}

// Env is the kernel the program is loaded into.
type Env struct {
	Kernel btfmodel.Kernel
	Arch   btfmodel.Arch
	BTF    *btf.Spec
	// ErrorInjection is the error-injection list by function name; nil means unknown (see
	// btfmodel.AttachEnv).
	ErrorInjection map[string]bool
}

// Result is the verifier's answer.
type Result struct {
	Accepted bool `json:"accepted"`
	// Error is the kernel's last error line (empty when accepted, or when the kernel rejects
	// without a message, as for btf_id_deny). Lines starting "model: " are the model's own:
	// input it cannot load, or constructs it does not model.
	Error string   `json:"error"`
	Errno string   `json:"errno,omitempty"` // "EINVAL", "EACCES", ... when rejected
	Log   []string `json:"log"`
	// Loads explains, for accepted programs, every ctx and BTF load, in insn order.
	Loads []LoadExplanation `json:"loads"`
	// Notes are model caveats: things the model does not know (an unmodelled helper, an
	// attach-time refusal that happens after loading, ...).
	Notes []string `json:"notes,omitempty"`
}

// LoadExplanation explains one ctx or PTR_TO_BTF_ID load.
type LoadExplanation struct {
	Insn int    `json:"insn"`
	Text string `json:"text"` // "r2 = ctx[0] (struct sock *) -> PTR_TO_BTF_ID sock"
}

func (l LoadExplanation) String() string { return fmt.Sprintf("%d: %s", l.Insn, l.Text) }

// ParseSection splits a libbpf section name into attach type, target and sleepable flag:
// fentry/, fexit/, fmod_ret/ and lsm/ (each also .s, sleepable) and tp_btf/, as libbpf's
// section_defs spell them (tools/lib/bpf/libbpf.c), and struct_ops/OPS:MEMBER (also .s),
// the member a .struct_ops map would give the program. A leading '?' (autoload off) changes
// nothing for the verifier. A "module:function" target is kept whole (see moduleTarget).
func ParseSection(sec string) (btfmodel.AttachType, string, bool, error) {
	sec = strings.TrimPrefix(sec, "?")
	kind, target, ok := strings.Cut(sec, "/")
	if !ok || target == "" {
		return "", "", false, fmt.Errorf("section %q: want <kind>/<function>", sec)
	}
	sleepable := strings.HasSuffix(kind, ".s")
	kind = strings.TrimSuffix(kind, ".s")
	switch {
	case kind == "fentry" || kind == "fexit" || kind == "fmod_ret":
		return btfmodel.AttachType(kind), target, sleepable, nil
	case kind == "lsm":
		return btfmodel.LSM, "bpf_lsm_" + target, sleepable, nil
	case kind == "tp_btf" && !sleepable:
		return btfmodel.RawTP, target, false, nil
	case kind == "struct_ops":
		// libbpf ignores the name (the .struct_ops map decides the member); a program
		// given without an object names it as "OPS:MEMBER".
		if ops, member, ok := strings.Cut(target, ":"); !ok || ops == "" || member == "" {
			return "", "", false, fmt.Errorf("section %q: a struct_ops program outside an object names its member: struct_ops/OPS:MEMBER", sec)
		}
		return btfmodel.StructOps, target, sleepable, nil
	}
	return "", "", false, fmt.Errorf("section %q: unsupported program kind %q (want fentry, fexit, fmod_ret, lsm, optionally with .s, tp_btf, or struct_ops/OPS:MEMBER)", sec, kind)
}

// gplCompatible is license_is_gpl_compatible (include/linux/license.h).
func gplCompatible(l string) bool {
	switch l {
	case "GPL", "GPL v2", "GPL and additional rights", "Dual BSD/GPL", "Dual MIT/GPL", "Dual MPL/GPL":
		return true
	}
	return false
}

// Check loads prog into the modelled kernel: attach checks, then the instruction walk.
func Check(prog Program, env Env) Result {
	c := &checker{prog: &prog, env: env}
	c.run()
	res := Result{Accepted: c.errMsg == "" && c.errno == "", Log: c.log, Notes: c.notes}
	if !res.Accepted {
		res.Error, res.Errno = c.errMsg, c.errno
	} else {
		res.Loads = c.loadList()
	}
	return res
}
