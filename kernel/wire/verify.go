package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// KindVerify frames carry one VerifyResult each, in request order.
const KindVerify = "verify"

// VerifyRequest asks the agent to load programs through the kernel's verifier, one at a
// time: each load is independent, and every FD it opened is closed before the next. A
// program in JSON (kernel/testdata/verify/programs.json has more):
//
//	{"name": "map_lookup", "type": "tracing", "attach_type": "fentry",
//	 "attach_to": "bpf_fentry_test1", "license": "GPL",
//	 "maps": [{"name": "counts", "type": "hash", "key_size": 4, "value_size": 8, "max_entries": 16}],
//	 "map_refs": [{"insn": 1, "map": "counts"}],
//	 "insns": "620afcff00000000 1811000000000000 0000000000000000 ..."}
type VerifyRequest struct {
	// LogLevel is BPF_PROG_LOAD's log_level: 1 (the default when 0), 2 for every
	// instruction's state, optionally |4 for statistics.
	LogLevel uint32 `json:"log_level"`
	// LogLimit bounds the log buffer in bytes (default 16 MiB); a longer log comes back
	// truncated, with the verdict of a second load without a log.
	LogLimit uint32          `json:"log_limit,omitempty"`
	Programs []VerifyProgram `json:"programs"`
}

// VerifyProgram is one BPF_PROG_LOAD, described so that the agent can rebuild it against
// the guest kernel: the attach target is a name resolved to a BTF id there (as libbpf does),
// maps are specs the agent creates, and map references are patched with its own FDs.
type VerifyProgram struct {
	Name       string `json:"name"`        // the program's name (the kernel keeps 15 characters)
	Type       string `json:"type"`        // "tracing", "lsm" or "struct_ops"
	AttachType string `json:"attach_type"` // "fentry", "fexit", "fmod_ret", "raw_tp" (tp_btf), "lsm_mac" or "struct_ops"
	// AttachTo is the kernel function as in a libbpf section name: "tcp_v4_connect", the
	// LSM hook "file_open" (the agent adds libbpf's "bpf_lsm_" prefix when missing), or the
	// tracepoint "sched_switch" of a raw_tp program (the agent looks up the btf_trace_
	// typedef). "module:function" as libbpf spells it: a prefix of "vmlinux" is the kernel.
	// A struct_ops program names the ops table and the member it implements, "OPS:MEMBER"
	// ("tcp_congestion_ops:cong_avoid"), as libbpf learns it from the .struct_ops map: the
	// agent loads it with attach_btf_id the struct's vmlinux id and expected_attach_type
	// the member's index in the guest's BTF.
	AttachTo  string `json:"attach_to"`
	Sleepable bool   `json:"sleepable,omitempty"` // BPF_F_SLEEPABLE
	License   string `json:"license"`
	// Insns is the bytecode as the kernel reads it: 8 bytes per instruction, little-endian
	// fields (both architectures are little-endian), a ld_imm64 taking two.
	Insns   Bytecode    `json:"insns"`
	Maps    []VerifyMap `json:"maps,omitempty"`
	MapRefs []MapRef    `json:"map_refs,omitempty"`
	Kfuncs  []KfuncRef  `json:"kfuncs,omitempty"`
	Ksyms   []KsymRef   `json:"ksyms,omitempty"`
	// BTF, FuncInfo and LineInfo are optional: the program's own BTF (raw, as BPF_BTF_LOAD
	// takes it) and its bpf_func_info (8-byte) and bpf_line_info (16-byte) records.
	BTF      []byte `json:"btf,omitempty"`
	FuncInfo []byte `json:"func_info,omitempty"`
	LineInfo []byte `json:"line_info,omitempty"`
}

// VerifyMap is a map a program refers to; the agent creates it before the load.
type VerifyMap struct {
	Name       string `json:"name"`
	Type       string `json:"type"` // enum bpf_map_type without BPF_MAP_TYPE_, lower case: "hash", "array", ...
	KeySize    uint32 `json:"key_size"`
	ValueSize  uint32 `json:"value_size"`
	MaxEntries uint32 `json:"max_entries"`
	Flags      uint32 `json:"flags,omitempty"`
	Data       []byte `json:"data,omitempty"`   // the value of key 0 (ELF data sections)
	Freeze     bool   `json:"freeze,omitempty"` // BPF_MAP_FREEZE after Data (.rodata: the verifier then reads its constants)
	// BTF is a raw BTF blob (as BPF_BTF_LOAD takes it) holding the map's key and value types,
	// BTFKeyTypeID and BTFValueTypeID their ids in it: libbpf's map creation with btf_fd.
	// Local storage maps need it, as do values holding a struct bpf_spin_lock.
	BTF            []byte `json:"btf,omitempty"`
	BTFKeyTypeID   uint32 `json:"btf_key_type_id,omitempty"`
	BTFValueTypeID uint32 `json:"btf_value_type_id,omitempty"`
}

// MapRef says that the ld_imm64 at raw instruction index Insn (src_reg BPF_PSEUDO_MAP_FD or
// BPF_PSEUDO_MAP_VALUE) loads Map: the agent writes the map's FD into its first imm.
type MapRef struct {
	Insn int    `json:"insn"`
	Map  string `json:"map"`
}

// KfuncRef says that the call at raw instruction index Insn (src_reg BPF_PSEUDO_KFUNC_CALL)
// calls the kernel function Func: the agent writes its vmlinux BTF id into imm.
type KfuncRef struct {
	Insn int    `json:"insn"`
	Func string `json:"func"`
}

// KsymRef says that the ld_imm64 at raw instruction index Insn loads the kernel variable
// Var (an __ksym extern), as libbpf resolves it (bpf_object__resolve_ksyms): a typed one
// (src_reg BPF_PSEUDO_BTF_ID) gets the vmlinux BTF id of the VAR in imm, a typeless one
// (src_reg 0) its /proc/kallsyms address in imm and the next imm. A Weak one the kernel
// lacks resolves to 0, as libbpf's does.
type KsymRef struct {
	Insn  int    `json:"insn"`
	Var   string `json:"var"`
	Typed bool   `json:"typed,omitempty"`
	Weak  bool   `json:"weak,omitempty"`
}

// VerifyResult is the kernel's verdict on one program.
type VerifyResult struct {
	Index    int    `json:"index"` // position in the request
	Name     string `json:"name"`
	Accepted bool   `json:"accepted"`
	Errno    string `json:"errno,omitempty"`
	// Stage says which step failed: "target" (BTF id lookup, as libbpf reports it), "kfunc",
	// "map", "btf" (the program's BTF), "load" (BPF_PROG_LOAD), "request" (malformed input)
	// or "guest" (set by the host when a guest died on this program).
	Stage string `json:"stage,omitempty"`
	// Error is the kernel's reason: the last log line that is not a statistic. Empty when
	// the kernel refused without a log line (Errno then says why), or when a truncated log
	// lost its end (kernels before 6.4 keep a full log's start).
	Error string   `json:"error,omitempty"`
	Log   []string `json:"log,omitempty"` // the verifier log, verbatim, one line per element
	// Truncated: the log outgrew VerifyRequest.LogLimit; the verdict comes from a second
	// load without a log.
	Truncated bool `json:"truncated,omitempty"`
	// BTFDropped: the kernel refused the program's BTF (BPF_BTF_LOAD), so the program was
	// loaded without BTF, func and line info, as libbpf does; this is the refusal.
	BTFDropped string `json:"btf_dropped,omitempty"`
}

// Program types and attach types (include/uapi/linux/bpf.h).
var (
	ProgTypes = map[string]uint32{"tracing": 26, "struct_ops": 27, "lsm": 29}
	// AttachTypes: "struct_ops" has no number of its own (expected_attach_type is the
	// member's index, found by the agent).
	AttachTypes = map[string]uint32{"raw_tp": 23, "fentry": 24, "fexit": 25, "fmod_ret": 26, "lsm_mac": 27, "struct_ops": 0}
)

// MapTypes numbers enum bpf_map_type by its lower-case name without BPF_MAP_TYPE_.
var MapTypes = map[string]uint32{
	"hash": 1, "array": 2, "prog_array": 3, "perf_event_array": 4, "percpu_hash": 5,
	"percpu_array": 6, "stack_trace": 7, "cgroup_array": 8, "lru_hash": 9,
	"lru_percpu_hash": 10, "lpm_trie": 11, "array_of_maps": 12, "hash_of_maps": 13,
	"devmap": 14, "sockmap": 15, "cpumap": 16, "xskmap": 17, "sockhash": 18,
	"cgroup_storage": 19, "reuseport_sockarray": 20, "percpu_cgroup_storage": 21,
	"queue": 22, "stack": 23, "sk_storage": 24, "devmap_hash": 25, "struct_ops": 26,
	"ringbuf": 27, "inode_storage": 28, "task_storage": 29, "bloom_filter": 30,
	"user_ringbuf": 31, "cgrp_storage": 32,
}

// MapTypeName is the inverse of MapTypes ("" for an unknown number).
func MapTypeName(n uint32) string {
	for k, v := range MapTypes {
		if v == n {
			return k
		}
	}
	return ""
}

// Instruction encoding facts the agent and the converters share.
const (
	InsnSize        = 8
	OpLdImm64       = 0x18 // BPF_LD | BPF_IMM | BPF_DW
	OpCall          = 0x85 // BPF_JMP | BPF_CALL
	PseudoMapFD     = 1
	PseudoMapValue  = 2
	PseudoKfuncCall = 2 // src_reg of a call
	PseudoBTFID     = 3 // src_reg of a ld_imm64 of a typed __ksym
)

// Bytecode is raw BPF instructions; in JSON, hex (whitespace is allowed when reading, so
// hand-written programs may put one instruction per word).
type Bytecode []byte

func (b Bytecode) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(b)), nil }

func (b *Bytecode) UnmarshalText(t []byte) error {
	s := strings.Join(strings.Fields(string(t)), "")
	d, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("bytecode: %w", err)
	}
	*b = d
	return nil
}

// Len is the number of 8-byte instruction slots.
func (b Bytecode) Len() int { return len(b) / InsnSize }

// Op, Src and Imm read instruction slot i's fields.
func (b Bytecode) Op(i int) uint8  { return b[i*InsnSize] }
func (b Bytecode) Src(i int) uint8 { return b[i*InsnSize+1] >> 4 }
func (b Bytecode) Imm(i int) int32 {
	return int32(binary.LittleEndian.Uint32(b[i*InsnSize+4:]))
}

// SetImm writes instruction slot i's imm field.
func (b Bytecode) SetImm(i int, v int32) {
	binary.LittleEndian.PutUint32(b[i*InsnSize+4:], uint32(v))
}

// Validate checks what the agent relies on; the kernel judges everything else (a program
// the kernel would refuse is still a valid request).
func (p *VerifyProgram) Validate() error {
	if _, ok := ProgTypes[p.Type]; !ok {
		return fmt.Errorf("program %q: type %q: want tracing, lsm or struct_ops", p.Name, p.Type)
	}
	if _, ok := AttachTypes[p.AttachType]; !ok {
		return fmt.Errorf("program %q: attach type %q: want fentry, fexit, fmod_ret or lsm_mac (or raw_tp for tp_btf, struct_ops)", p.Name, p.AttachType)
	}
	if (p.Type == "struct_ops") != (p.AttachType == "struct_ops") {
		return fmt.Errorf("program %q: type %q with attach type %q: struct_ops goes with struct_ops", p.Name, p.Type, p.AttachType)
	}
	if p.Type == "struct_ops" {
		if ops, member, ok := strings.Cut(p.AttachTo, ":"); !ok || ops == "" || member == "" {
			return fmt.Errorf("program %q: struct_ops target %q: want OPS:MEMBER (tcp_congestion_ops:cong_avoid)", p.Name, p.AttachTo)
		}
	}
	if p.AttachTo == "" {
		return fmt.Errorf("program %q: no attach target", p.Name)
	}
	if len(p.Insns) == 0 || len(p.Insns)%InsnSize != 0 {
		return fmt.Errorf("program %q: %d bytes of bytecode, want a non-zero multiple of %d", p.Name, len(p.Insns), InsnSize)
	}
	maps := map[string]bool{}
	for _, m := range p.Maps {
		if _, ok := MapTypes[m.Type]; !ok {
			return fmt.Errorf("program %q: map %q: unknown type %q", p.Name, m.Name, m.Type)
		}
		if maps[m.Name] {
			return fmt.Errorf("program %q: map %q given twice", p.Name, m.Name)
		}
		maps[m.Name] = true
	}
	for _, r := range p.MapRefs {
		if r.Insn < 0 || r.Insn+1 >= p.Insns.Len() || p.Insns.Op(r.Insn) != OpLdImm64 {
			return fmt.Errorf("program %q: map reference %q at insn %d: not a ld_imm64", p.Name, r.Map, r.Insn)
		}
		if s := p.Insns.Src(r.Insn); s != PseudoMapFD && s != PseudoMapValue {
			return fmt.Errorf("program %q: map reference %q at insn %d: src_reg %d, want %d (map fd) or %d (map value)", p.Name, r.Map, r.Insn, s, PseudoMapFD, PseudoMapValue)
		}
		if !maps[r.Map] {
			return fmt.Errorf("program %q: insn %d refers to map %q, which is not among its maps", p.Name, r.Insn, r.Map)
		}
	}
	for _, k := range p.Kfuncs {
		if k.Insn < 0 || k.Insn >= p.Insns.Len() || p.Insns.Op(k.Insn) != OpCall || p.Insns.Src(k.Insn) != PseudoKfuncCall {
			return fmt.Errorf("program %q: kfunc %q at insn %d: not a kfunc call", p.Name, k.Func, k.Insn)
		}
	}
	for _, k := range p.Ksyms {
		if k.Insn < 0 || k.Insn+1 >= p.Insns.Len() || p.Insns.Op(k.Insn) != OpLdImm64 {
			return fmt.Errorf("program %q: ksym %q at insn %d: not a ld_imm64", p.Name, k.Var, k.Insn)
		}
		if want := map[bool]uint8{true: PseudoBTFID, false: 0}[k.Typed]; p.Insns.Src(k.Insn) != want {
			return fmt.Errorf("program %q: ksym %q at insn %d: src_reg %d, want %d", p.Name, k.Var, k.Insn, p.Insns.Src(k.Insn), want)
		}
	}
	if (len(p.FuncInfo) > 0 || len(p.LineInfo) > 0) && len(p.BTF) == 0 {
		return fmt.Errorf("program %q: func or line info without BTF", p.Name)
	}
	if len(p.FuncInfo)%8 != 0 || len(p.LineInfo)%16 != 0 {
		return fmt.Errorf("program %q: func info (%d bytes) or line info (%d bytes) not whole records", p.Name, len(p.FuncInfo), len(p.LineInfo))
	}
	return nil
}

// ReasonLine picks the kernel's reason out of a verifier log: the last line that is not
// one of the statistics the verifier prints after its verdict ("processed N insns ...",
// "verification time ...", "stack depth ..."). "" if there is none.
func ReasonLine(log []string) string {
	for i := len(log) - 1; i >= 0; i-- {
		l := strings.TrimSpace(log[i])
		switch {
		case l == "",
			strings.HasPrefix(l, "processed ") && strings.Contains(l, " insns (limit "),
			strings.HasPrefix(l, "verification time "),
			strings.HasPrefix(l, "stack depth "):
			continue
		}
		return log[i]
	}
	return ""
}

// SplitLog turns the kernel's log buffer into lines: up to its NUL, without the final newline.
func SplitLog(buf []byte) []string {
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	s := strings.TrimSuffix(string(buf), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
