package btfmodel

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// StructOps is the attach type of a BPF_PROG_TYPE_STRUCT_OPS program: it implements one member
// of an ops table, and its expected_attach_type is the member's index.
const StructOps AttachType = "struct_ops"

// The BPF_TRAMP_F_* bits bpf_struct_ops_prepare_trampoline sets (include/linux/bpf.h).
const (
	trampFRetFentryRet uint32 = 1 << 4 // BPF_TRAMP_F_RET_FENTRY_RET
	trampFIndirect     uint32 = 1 << 8 // BPF_TRAMP_F_INDIRECT
)

// structOpsTable is what one ops table's registration (its struct bpf_struct_ops: cfi_stubs,
// check_member, init_member) decides about the members BPF may implement, as data: the
// captures of Debian's kernels settle every entry.
type structOpsTable struct {
	// unsupported are members the kernel refuses to let BPF implement: check_member's list
	// (bpf_tcp_ca_check_member's unsupported_ops, net/ipv4/bpf_tcp_ca.c, 6.1) or, in later
	// kernels, a NULL cfi_stubs entry (bpf_struct_ops_supported, kernel/bpf/bpf_struct_ops.c).
	// Both refuse with -ENOTSUPP and "attach to unsupported member %s of struct %s".
	unsupported []string
	// supported, when set, are the only members with a cfi_stubs entry: every other function
	// pointer is unsupported (Qdisc_ops: net/sched/bpf_qdisc.c's __bpf_ops_qdisc_ops stubs
	// enqueue, dequeue, init, reset and destroy; the 7.2 captures refuse the other eleven).
	supported []string
	// initMemberRefuses: the table's init_member fails for every member, so no map update
	// ever builds its images (bpf_dummy_init_member, net/bpf/bpf_dummy_struct_ops.c, returns
	// -EOPNOTSUPP: bpf_dummy_ops exists to be run by BPF_PROG_TEST_RUN, which builds a
	// trampoline of its own for the one run and frees it).
	initMemberRefuses string
	// privStack are members whose programs ask for a private stack (check_member sets
	// priv_stack_requested): a JIT without bpf_jit_supports_private_stack refuses them at load.
	privStack []string
	// privStackSince is the kernel that asks for it (CapStructOpsSchedExtPrivStack).
	privStackSince Capability
}

var structOpsTables = map[string]structOpsTable{
	"tcp_congestion_ops": {unsupported: []string{"get_info"}},
	"Qdisc_ops":          {supported: []string{"enqueue", "dequeue", "init", "reset", "destroy"}},
	"bpf_dummy_ops": {initMemberRefuses: "bpf_dummy_init_member refuses every member (-EOPNOTSUPP): bpf_dummy_ops " +
		"is run only by BPF_PROG_TEST_RUN, which builds a trampoline for the one run"},
	// kernel/sched/ext.c: ops.dispatch may recurse into a sub-scheduler's dispatch, so its
	// program asks for a private stack; riscv64 7.2 refuses it ("Private stack not supported
	// by jit", EACCES), amd64 and arm64 load it.
	// sub_caps_updated and sub_ecaps_updated (7.3) take cid masks: the cpu-named table's
	// cfi_stubs leave them NULL, though their stubs (named sched_ext_ops__*) are in BTF for
	// sched_ext_ops_cid, which has them. Debian's 7.3.4 refuses both in sched_ext_ops only.
	"sched_ext_ops": {privStack: []string{"dispatch"}, privStackSince: CapStructOpsSchedExtPrivStack,
		unsupported: []string{"sub_caps_updated", "sub_ecaps_updated"}},
	"sched_ext_ops_cid": {privStack: []string{"dispatch"}, privStackSince: CapStructOpsSchedExtPrivStack},
	"io_uring_bpf_ops":  {},
	"hid_bpf_ops":       {},
}

// StructOpsMember is one member of an ops table as a kernel sees it.
type StructOpsMember struct {
	Ops    string `json:"ops"`
	Member string `json:"member"`
	// OpsBTFID is the ops struct's BTF id (attach_btf_id; the verifier's messages print it).
	OpsBTFID uint32 `json:"ops_btf_id"`
	// Index is the member's index in the struct: the program's expected_attach_type, from
	// this kernel's BTF (7.2 adds tcp_congestion_ops.cwnd_event_tx_start and reorders).
	Index int `json:"index"`
	// Offset is the member's byte offset (moff).
	Offset uint32 `json:"offset"`
	// Model is btf_distill_func_proto of the member's prototype, named after the member as
	// bpf_struct_ops_desc_init names it; nil when the member is no function pointer or the
	// prototype does not distil.
	Model *FuncModel `json:"-"`
	// Flags are the BPF_TRAMP_F_* flags the kernel builds the member's image with.
	Flags uint32 `json:"flags"`
	// Verdict is whether BPF may implement the member on this profile and arch.
	Verdict Verdict `json:"verdict"`
}

// StructOpsFlags are the trampoline flags of a member with model m on profile k: INDIRECT
// where the kernel has it (CapStructOpsIndirect), RET_FENTRY_RET for a non-void member
// (bpf_struct_ops_prepare_trampoline: "if (model->ret_size > 0)"; 6.1 sets it alone).
func StructOpsFlags(m *FuncModel, k Kernel) uint32 {
	var f uint32
	if k.Has(CapStructOpsIndirect) {
		f |= trampFIndirect
	}
	if m != nil && m.RetSize > 0 {
		f |= trampFRetFentryRet
	}
	return f
}

// StructOpsModel finds member of struct ops in spec and decides it as the kernel does: the
// registration of the table (bpf_struct_ops_desc_init, which distils every function-pointer
// member), the load of a program for it (check_struct_ops_btf_id, kernel/bpf/verifier.c) and
// the image's build at map update (bpf_struct_ops_map_update_elem, the arch's limits). A
// refusal is a Verdict, not an error; errors are for names the BTF does not have.
func StructOpsModel(spec *btf.Spec, ops, member string, k Kernel, a Arch) (*StructOpsMember, error) {
	st, err := structByName(spec, ops)
	if err != nil {
		return nil, err
	}
	id, _ := spec.TypeID(st)
	r := &StructOpsMember{Ops: ops, Member: member, OpsBTFID: uint32(id), Index: -1}
	refuse := func(stage Stage, errno, msg string) *StructOpsMember {
		r.Verdict = Verdict{Type: StructOps, Stage: stage, Errno: errno, Msg: msg, KernelMsg: true}
		return r
	}
	var mem *btf.Member
	for i := range st.Members {
		if st.Members[i].Name == member {
			mem, r.Index = &st.Members[i], i
			break
		}
	}
	if mem == nil {
		names := make([]string, len(st.Members))
		for i, m := range st.Members {
			names[i] = m.Name
		}
		return nil, fmt.Errorf("struct %s has no member %s (members: %s)", ops, member, strings.Join(names, ", "))
	}
	r.Offset = uint32(mem.Offset.Bytes())

	// A table is registered only when its value type exists (BTF_STRUCT_OPS_TYPE /
	// bpf_struct_ops_<name>); bpf_struct_ops_find fails otherwise.
	notSupported := fmt.Sprintf("attach_btf_id %d is not a supported struct", id)
	if _, err := structByName(spec, "bpf_struct_ops_"+ops); err != nil {
		return refuse(StageLoad, "ENOTSUPP", notSupported), nil
	}
	// bpf_struct_ops_desc_init distils every function-pointer member; one failure leaves
	// the whole table unregistered, so every member of it is "not a supported struct".
	for _, m := range st.Members {
		proto := funcPtrProto(m.Type)
		if proto == nil {
			continue
		}
		if _, err := DistillProto(m.Name, proto, k); err != nil {
			r.Verdict = Verdict{Type: StructOps, Stage: StageLoad, Errno: "ENOTSUPP", Msg: notSupported, KernelMsg: true,
				Note: fmt.Sprintf("the table never registered: at boot %s (Error in parsing func ptr %s in struct %s)", err, m.Name, ops)}
			return r, nil
		}
	}
	proto := funcPtrProto(mem.Type)
	if proto == nil {
		return refuse(StageLoad, "EINVAL", fmt.Sprintf("attach to invalid member %s(@idx %d) of struct %s", member, r.Index, ops)), nil
	}
	m, err := DistillProto(member, proto, k)
	if err != nil {
		return nil, err // unreachable: the loop above distilled it
	}
	r.Model, r.Flags = m, StructOpsFlags(m, k)
	tab, known := structOpsTables[ops]
	if tab.isUnsupported(member) {
		return refuse(StageLoad, "ENOTSUPP", fmt.Sprintf("attach to unsupported member %s of struct %s", member, ops)), nil
	}
	if arg := arenaArg(spec, ops, member); arg != "" {
		// check_struct_ops_btf_id (kernel/bpf/verifier.c): prepare_arg_info marked the
		// argument PTR_TO_ARENA (BTF_FMODEL_ARENA_ARG, from the CFI stub's "__arena" or
		// "__arena__nullable" parameter name), and a program that uses no arena map has
		// nothing to translate it against. A struct_ops request names no maps.
		r.Verdict = Verdict{Type: StructOps, Stage: StageLoad, Errno: "EINVAL", KernelMsg: true,
			Msg:  fmt.Sprintf("arena argument of %s requires a program with an associated arena", member),
			Note: fmt.Sprintf("argument %s of the CFI stub is an arena pointer", arg)}
		return r, nil
	}
	if slices.Contains(tab.privStack, member) && k.Has(tab.privStackSince) && !VerifierFor(a, k).PrivateStack {
		// bpf_enable_priv_stack (kernel/bpf/verifier.c) for a requested private stack.
		return refuse(StageLoad, "EACCES", "Private stack not supported by jit"), nil
	}
	// The arch JIT's argument limits, when the map update builds the image.
	if errno, why := CheckBPFProgTarget(m, AttachEnv{Kernel: k, Arch: a}); errno != "" {
		r.Verdict = Verdict{Type: StructOps, Stage: StageAttach, Errno: errno, Msg: why}
		return r, nil
	}
	if tab.initMemberRefuses != "" {
		// The program loads; BPF_MAP_UPDATE_ELEM fails before any image is built.
		r.Verdict = Verdict{Type: StructOps, Stage: StageAttach, Errno: "EOPNOTSUPP", Msg: tab.initMemberRefuses}
		return r, nil
	}
	r.Verdict = Verdict{Type: StructOps, OK: true}
	if !known {
		r.Verdict.Note = fmt.Sprintf("the members the kernel refuses in %s (its check_member and NULL cfi_stubs) are not modelled: no Debian kernel trampjit captured registers it", ops)
	}
	return r, nil
}

// StructOpsMembers lists the members of struct ops in this kernel's BTF, in index order.
func StructOpsMembers(spec *btf.Spec, ops string) ([]string, error) {
	st, err := structByName(spec, ops)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(st.Members))
	for i, m := range st.Members {
		names[i] = m.Name
	}
	return names, nil
}

// arenaArg is the first parameter of member's CFI stub whose name marks an arena pointer
// ("" if none). bpf_struct_ops_desc_init's prepare_arg_info (kernel/bpf/bpf_struct_ops.c)
// reads the stub's parameter names: a suffix "__arena" (or "__arena__nullable") makes the
// argument PTR_TO_ARENA. The stub is the FUNC <ops>__<member>; sched_ext_ops_cid points its
// cfi_stubs at sched_ext_ops' stubs where it has none of its own (kernel/sched/ext.c).
func arenaArg(spec *btf.Spec, ops, member string) string {
	stub, err := FuncByName(spec, ops+"__"+member)
	if base, cid := strings.CutSuffix(ops, "_cid"); err != nil && cid {
		stub, err = FuncByName(spec, base+"__"+member)
	}
	if err != nil {
		return ""
	}
	fp, _ := stub.Type.(*btf.FuncProto)
	if fp == nil {
		return ""
	}
	for _, p := range fp.Params {
		if strings.HasSuffix(p.Name, "__arena") || strings.HasSuffix(p.Name, "__arena__nullable") {
			return p.Name
		}
	}
	return ""
}

// isUnsupported reports whether the table refuses BPF for member.
func (t structOpsTable) isUnsupported(member string) bool {
	if t.supported != nil && !slices.Contains(t.supported, member) {
		return true
	}
	return slices.Contains(t.unsupported, member)
}

// funcPtrProto is btf_type_resolve_func_ptr: a pointer, past modifiers, to a function
// prototype, past modifiers; nil for anything else.
func funcPtrProto(t btf.Type) *btf.FuncProto {
	p, ok := SkipModifiers(t).(*btf.Pointer)
	if !ok {
		return nil
	}
	fp, _ := SkipModifiers(p.Target).(*btf.FuncProto)
	return fp
}

func structByName(spec *btf.Spec, name string) (*btf.Struct, error) {
	var st *btf.Struct
	err := spec.TypeByName(name, &st)
	if errors.Is(err, btf.ErrNotFound) {
		return nil, fmt.Errorf("the BTF has no struct %s", name)
	}
	if err != nil {
		return nil, fmt.Errorf("struct %s: %w", name, err)
	}
	return st, nil
}
