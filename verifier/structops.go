package verifier

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// BPF_PROG_TYPE_STRUCT_OPS programs: one member of an ops table (tcp_congestion_ops,
// bpf_dummy_ops, sched_ext_ops, ...). The program's context is the u64 array of the
// member's arguments, read as btf_ctx_access reads a traced function's; what the program
// may write through the pointer arguments is the table's own btf_struct_access.

// structOps is the member a struct_ops program implements, as resolved in the kernel's BTF.
type structOps struct {
	ops, member string
	st          *btf.Struct
	index       int
	// nullable are the arguments the member's CFI stub (<ops>__<member>) names with a
	// __nullable suffix: bpf_struct_ops_desc_init's arg_info, PTR_MAYBE_NULL in the ctx.
	nullable map[int]bool
	// refcounted are the stub's __ref arguments: do_check_common acquires a reference for
	// each before the first instruction (refID), which the program must give back.
	refcounted map[int]bool
	refID      map[int]uint32
}

// resolveStructOps finds the ops struct and the member as libbpf does before the load
// (bpf_map__init_kern_struct_ops: the STRUCT of that name in vmlinux, the member by name,
// its index the program's expected_attach_type); the kernel's attach_btf_id is the struct.
func (c *checker) resolveStructOps() error {
	ops, member, ok := strings.Cut(c.prog.Target, ":")
	if !ok || ops == "" || member == "" {
		return fmt.Errorf("struct_ops target %q: want OPS:MEMBER (tcp_congestion_ops:cong_avoid)", c.prog.Target)
	}
	var st *btf.Struct
	var sid btf.TypeID
	if types, err := c.env.BTF.AnyTypesByName(ops); err == nil {
		for _, t := range types {
			s, ok := t.(*btf.Struct)
			if !ok || s.Name != ops {
				continue
			}
			if id, err := c.env.BTF.TypeID(s); err == nil && (st == nil || id < sid) {
				st, sid = s, id
			}
		}
	}
	if st == nil {
		c.logf("struct_ops init_kern: struct %s is not found in kernel BTF", ops)
		return reject("ENOTSUP")
	}
	so := &structOps{ops: ops, member: member, st: st, index: -1, nullable: map[int]bool{},
		refcounted: map[int]bool{}, refID: map[int]uint32{}}
	for i, m := range st.Members {
		if m.Name == member {
			so.index = i
			c.proto = memberProto(m.Type)
			break
		}
	}
	if so.index < 0 {
		c.logf("struct_ops init_kern %s: Cannot find member %s in kernel BTF", ops, member)
		return reject("ENOTSUP")
	}
	if c.proto == nil {
		c.proto = &btf.FuncProto{Return: &btf.Void{}} // not a function: check_struct_ops_btf_id refuses it
	}
	stub, err := btfmodel.FuncByName(c.env.BTF, ops+"__"+member)
	if base, cid := strings.CutSuffix(ops, "_cid"); err != nil && cid {
		// sched_ext_ops_cid shares sched_ext_ops' stubs where the prototypes agree
		stub, err = btfmodel.FuncByName(c.env.BTF, base+"__"+member)
	}
	if err == nil {
		if fp, ok := stub.Type.(*btf.FuncProto); ok {
			for i, p := range fp.Params {
				switch {
				case strings.HasSuffix(p.Name, "__nullable"):
					so.nullable[i] = true
				case strings.HasSuffix(p.Name, "__ref"):
					so.refcounted[i] = true
				}
			}
		}
	}
	c.so = so
	c.btfID = uint32(sid)
	return nil
}

func hasMember(st *btf.Struct, name string) bool {
	for _, m := range st.Members {
		if m.Name == name {
			return true
		}
	}
	return false
}

// memberProto is btf_type_resolve_func_ptr: the prototype a function-pointer member points to.
func memberProto(t btf.Type) *btf.FuncProto {
	p, ok := btfmodel.SkipModifiers(t).(*btf.Pointer)
	if !ok {
		return nil
	}
	fp, _ := btfmodel.SkipModifiers(p.Target).(*btf.FuncProto)
	return fp
}

// supportedStructOpsMembers are the members with a CFI stub, for tables whose stubs leave
// some NULL (bpf_struct_ops_supported: "attach to unsupported member", ENOTSUPP):
// bpf_qdisc_ops' cfi_stubs (net/sched/bpf_qdisc.c).
var supportedStructOpsMembers = map[string]map[string]bool{
	"Qdisc_ops": {"enqueue": true, "dequeue": true, "init": true, "reset": true, "destroy": true},
}

const privStackMsg = "Private stack not supported by jit"

// sleepableStructOpsMembers are the members a table's check_member lets a sleepable
// program implement (bpf_dummy_ops_check_member, net/bpf/bpf_dummy_struct_ops.c;
// bpf_scx_check_member, kernel/sched/ext.c); a table not listed refuses none.
var sleepableStructOpsMembers = map[string]map[string]bool{
	"bpf_dummy_ops": {"test_sleepable": true},
	// (7.2's, every member tried: cgroup_set_bandwidth is not among them)
	"sched_ext_ops": {"init_task": true, "cgroup_init": true, "cgroup_exit": true, "cgroup_prep_move": true,
		"cpu_online": true, "cpu_offline": true, "init": true, "exit": true, "sub_attach": true, "sub_detach": true},
	// the same offsets in sched_ext_ops_cid, where the CPU members are named by cid
	"sched_ext_ops_cid": {"init_task": true, "cgroup_init": true, "cgroup_exit": true, "cgroup_prep_move": true,
		"cid_online": true, "cid_offline": true, "init": true, "exit": true, "sub_attach": true, "sub_detach": true},
	// hid_bpf_ops_check_member (drivers/hid/bpf/hid_bpf_struct_ops.c)
	"hid_bpf_ops": {"hid_rdesc_fixup": true, "hid_hw_request": true, "hid_hw_output_report": true},
}

// checkAttachStructOps is check_attach_btf_id's sleepable rule and check_struct_ops_btf_id
// (kernel/bpf/verifier.c): the license, the table (btfmodel.StructOpsModel decides the
// registered table, the member and the members BPF may not implement), then the table's
// check_member.
func (c *checker) checkAttachStructOps() error {
	p, so := c.prog, c.so
	if p.Sleepable && !c.has(btfmodel.CapVerifierStructOpsSleep) {
		c.logf("Only fentry/fexit/fmod_ret, lsm, and kprobe/uprobe programs can be sleepable")
		return reject("EINVAL")
	}
	if !gplCompatible(p.License) {
		c.logf("struct ops programs must have a GPL compatible license")
		return reject("EINVAL")
	}
	m, err := btfmodel.StructOpsModel(c.env.BTF, so.ops, so.member, c.env.Kernel, c.env.Arch)
	if err != nil {
		return err
	}
	v := m.Verdict
	if v.Note != "" {
		c.note("struct_ops: %s", v.Note)
	}
	privStack := false
	if !v.OK {
		switch {
		case v.Stage == btfmodel.StageAttach:
			// the image is built at the map update, after a successful load
			c.note("attach (map update, not the verifier): %s %s", v.Errno, v.Msg)
		case v.Msg == privStackMsg:
			privStack = true // refused after check_member, below
		default:
			c.logf("%s", v.Msg)
			return reject(v.Errno)
		}
	}
	if ok, listed := supportedStructOpsMembers[so.ops]; listed && !ok[so.member] {
		c.logf("attach to unsupported member %s of struct %s", so.member, so.ops)
		return reject("ENOTSUPP")
	}
	if allowed, ok := sleepableStructOpsMembers[so.ops]; ok && p.Sleepable && !allowed[so.member] {
		c.logf("attach to unsupported member %s of struct %s", so.member, so.ops)
		return reject("EINVAL")
	}
	// bpf_scx_check_member with CONFIG_EXT_SUB_SCHED (the BTF's sub_attach member says the
	// kernel has it): dispatch may nest along the scheduler hierarchy, so it asks for a
	// private stack, which check_struct_ops_btf_id refuses on a JIT without them.
	if so.member == "dispatch" && hasMember(so.st, "sub_attach") && !btfmodel.VerifierFor(c.env.Arch, c.env.Kernel).PrivateStack {
		privStack = true
	}
	if privStack {
		c.logf("%s", privStackMsg)
		return reject("EACCES")
	}
	return nil
}

// structOpsArgInfo is btf_ctx_access's ctx_arg_info for pointer argument arg: the stub's
// __nullable and __ref arguments load without a "has btf_id" line, trusted, maybe-NULL
// or holding the reference acquired at the start.
func (c *checker) structOpsArgInfo(arg int, st btf.Type, path string) (reg, bool) {
	if c.so == nil || !c.has(btfmodel.CapVerifierNullableArgs) {
		return reg{}, false
	}
	r := reg{typ: ptrToBTFID, flags: flagTrusted, btfType: st, v: constScalar(0), path: path}
	switch {
	case c.so.nullable[arg]:
		r.flags |= flagMaybeNull
		r.id = c.newID()
	case c.so.refcounted[arg]:
		r.refObjID = c.so.refID[arg]
	default:
		return reg{}, false
	}
	return r, true
}

// structOpsRefs acquires the references of the refcounted arguments, in argument order, as
// do_check_common does for a struct_ops program before its first instruction.
func (c *checker) structOpsRefs(st *state) {
	if c.so == nil {
		return
	}
	for i := range c.proto.Params {
		if c.so.refcounted[i] {
			id := c.newID()
			st.refs = append(st.refs, refState{id: id, insn: 0})
			c.so.refID[i] = id
		}
	}
}

func (c *checker) structOpsPromote(r *reg) {
	if c.so.ops != "tcp_congestion_ops" || r.flags&(flagMaybeNull|flagUntrusted) != 0 || btfName(r.btfType) != "sock" {
		return
	}
	var tp *btf.Struct
	if c.env.BTF.TypeByName("tcp_sock", &tp) == nil {
		r.btfType = tp
	}
}

// tcpCAWritable are the fields bpf_tcp_ca_btf_struct_access (net/ipv4/bpf_tcp_ca.c) lets a
// congestion control write, by the struct holding them; icsk_ca_priv is a whole range.
var tcpCAWritable = []struct{ parent, field string }{
	{"sock", "sk_pacing_rate"}, {"sock", "sk_pacing_status"},
	{"inet_connection_sock", "icsk_ca_priv"}, {"inet_connection_sock", "icsk_ack.pending"},
	{"tcp_sock", "snd_cwnd"}, {"tcp_sock", "snd_cwnd_cnt"}, {"tcp_sock", "snd_ssthresh"},
	{"tcp_sock", "ecn_flags"},
}

// tcpCAWritableLater joined the list after 6.1 (CapVerifierTCPCAWriteMore).
var tcpCAWritableLater = []struct{ parent, field string }{{"tcp_sock", "app_limited"}, {"tcp_sock", "snd_cwnd_stamp"}}

// tableWritable are the fields other tables' btf_struct_access lets a program write, by
// table and struct: bpf_qdisc_btf_struct_access (net/sched/bpf_qdisc.c),
// hid_bpf_ops_btf_struct_access (drivers/hid/bpf/hid_bpf_struct_ops.c: the retval/size
// union, "" naming an anonymous member), io_uring's loop parameters (7.2 captures).
var tableWritable = map[string]map[string][]string{
	"Qdisc_ops":        {"Qdisc": {"limit", "q.qlen", "qstats.backlog"}, "sk_buff": {"tstamp", "cb"}},
	"hid_bpf_ops":      {"hid_bpf_ctx": {""}},
	"io_uring_bpf_ops": {"iou_loop_params": {"cq_wait_idx"}},
}

// tcpCAKfuncs is bpf_tcp_ca_check_kfunc_ids (net/ipv4/bpf_tcp_ca.c), registered for every
// BPF_PROG_TYPE_STRUCT_OPS program, without flags.
var tcpCAKfuncs = map[string]bool{"tcp_reno_ssthresh": true, "tcp_reno_cong_avoid": true,
	"tcp_reno_undo_cwnd": true, "tcp_slow_start": true, "tcp_cong_avoid_ai": true}

// scxWritable are bpf_scx_btf_struct_access's fields of task_struct (kernel/sched/ext.c).
var scxWritable = []string{"scx.slice", "scx.dsq_vtime", "scx.disallow"}

// structOpsWrite is the table's btf_struct_access for a write through a PTR_TO_BTF_ID.
func (c *checker) structOpsWrite(regno uint8, r *reg, off, size int) error {
	tname := btfName(r.btfType)
	refuse := func(msg string, args ...any) error {
		if c.has(btfmodel.CapVerifierOpsWriteMsg) {
			// the verifier's own words for any refused write
			c.logf("R%d cannot write into ptr_%s at off=%d size=%d", regno, tname, off, size)
		} else {
			c.logf(msg, args...)
		}
		return reject("EACCES")
	}
	switch c.so.ops {
	case "tcp_congestion_ops":
		if tname != "tcp_sock" {
			return refuse("only read is supported")
		}
		fields := tcpCAWritable
		if c.has(btfmodel.CapVerifierTCPCAWriteMore) {
			fields = append(fields[:len(fields):len(fields)], tcpCAWritableLater...)
		}
		for _, w := range fields {
			start, end, ok := c.fieldRange(w.parent, w.field)
			if !ok || off < start || off >= end || (w.field != "icsk_ca_priv" && off != start) {
				continue
			}
			if off+size > end {
				return refuse("write access at off %d with size %d beyond the member of tcp_sock ended at %d", off, size, end)
			}
			return nil
		}
		return refuse("no write support to tcp_sock at off %d", off)
	case "bpf_dummy_ops":
		if tname != "bpf_dummy_ops_state" {
			return refuse("only access to bpf_dummy_ops_state is supported")
		}
		if !c.has(btfmodel.CapVerifierOpsWriteMsg) && !c.has(btfmodel.CapVerifierNullableArgs) {
			// 6.1: the write is walked as a read of the state (btf_struct_access)
			return c.btfAccess(regno, &reg{typ: ptrToBTFID, btfType: r.btfType, v: constScalar(0)}, off, size, false, -1)
		}
		if sz, err := btf.Sizeof(r.btfType); err == nil && off+size > sz {
			return refuse("write access at off %d with size %d", off, size)
		}
		return nil
	case "sched_ext_ops":
		if tname == "task_struct" {
			for _, f := range scxWritable {
				start, end, ok := c.fieldRange("task_struct", f)
				if ok && off >= start && off+size <= end {
					return nil
				}
			}
		}
		return refuse("only read is supported")
	case "Qdisc_ops", "hid_bpf_ops", "io_uring_bpf_ops":
		fields, known := tableWritable[c.so.ops][tname]
		for _, f := range fields {
			start, end, ok := c.fieldRange(tname, f)
			if ok && off >= start && off+size <= end {
				return nil
			}
		}
		if c.so.ops == "Qdisc_ops" {
			// bpf_qdisc_btf_struct_access keeps its own words, before the verifier's
			if !known {
				c.logf("only read is supported")
			} else {
				c.logf("no write support to %s at off %d", tname, off)
			}
			if c.has(btfmodel.CapVerifierOpsWriteMsg) {
				c.logf("R%d cannot write into ptr_%s at off=%d size=%d", regno, tname, off, size)
			}
			return reject("EACCES")
		}
		return refuse("only read is supported")
	}
	return refuse("only read is supported")
}

// fieldRange is offsetof and offsetofend of a (dotted) field of a struct, from the
// kernel's BTF, with the offset of that struct inside tcp_sock for tcp_congestion_ops'
// fields (sock and inet_connection_sock sit at offset 0 of it).
func (c *checker) fieldRange(parent, path string) (int, int, bool) {
	var st *btf.Struct
	if c.env.BTF.TypeByName(parent, &st) != nil {
		return 0, 0, false
	}
	off := 0
	var t btf.Type = st
	for _, name := range strings.Split(path, ".") {
		s, ok := btfmodel.SkipModifiers(t).(*btf.Struct)
		if !ok {
			return 0, 0, false
		}
		found := false
		for _, m := range s.Members {
			if m.Name == name {
				off += int(m.Offset.Bytes())
				t, found = m.Type, true
				break
			}
		}
		if !found {
			return 0, 0, false
		}
	}
	sz, err := btf.Sizeof(t)
	if err != nil {
		return 0, 0, false
	}
	return off, off + sz, true
}

// structOpsReturn is check_return_code for struct_ops: a void member needs no R0; any
// other returns whatever R0 holds (a pointer too: the loader is privileged).
func (c *checker) structOpsReturn() error {
	if _, void := c.proto.Return.(*btf.Void); void || c.proto.Return == nil {
		return nil
	}
	return c.readReg(0)
}

func (so *structOps) String() string { return fmt.Sprintf("%s.%s", so.ops, so.member) }

// baseHelpers are the helpers bpf_base_func_proto (kernel/bpf/helpers.c) gives a
// privileged loader: what sched_ext_ops, Qdisc_ops, hid_bpf_ops and io_uring_bpf_ops
// programs get, and tcp_congestion_ops programs beyond bpf_tcp_ca's own; every helper id
// was tried from each table on each profile (structops_helpers_all.json).
var baseHelpers = map[int32]bool{
	1: true, 2: true, 3: true, 87: true, 88: true, 89: true, 195: true, // maps
	5: true, 7: true, 8: true, 12: true, 42: true, 125: true, 208: true, // time, ids, tail call
	130: true, 131: true, 132: true, 133: true, 134: true, 209: true, // ring buffers
	164: true, 181: true, 182: true, 105: true, 106: true, // for_each_map_elem, loop, strncmp, strtol, strtoul
	197: true, 198: true, 199: true, 200: true, 201: true, 202: true, 203: true, // dynptrs
	93: true, 94: true, 118: true, 153: true, 154: true, 169: true, 170: true, 171: true, 172: true, 194: true, // CAP_BPF
	6: true, 35: true, 112: true, 113: true, 114: true, 115: true, 149: true, 158: true, 165: true, 175: true, 177: true, // CAP_PERFMON
}

// baseHelpersLater joined bpf_base_func_proto after 6.1 (CapHelperBasePidTgid): the
// current task's pid/tgid and cgroup ids, cgroup storage.
var baseHelpersLater = map[int32]bool{14: true, 80: true, 120: true, 123: true, 210: true, 211: true}

// baseHelpersTracing joined it after 6.12 (CapHelperBaseTracing): the tracing helpers
// that need no tracing context (uid/gid, comm, classid, perf event reads, signals, task
// stacks and storage, user copies, branch snapshots, find_vma).
var baseHelpersTracing = map[int32]bool{15: true, 16: true, 17: true, 22: true, 37: true, 55: true, 109: true,
	117: true, 141: true, 148: true, 156: true, 157: true, 176: true, 180: true, 191: true}

// tcpCAHelpers are bpf_tcp_ca_get_func_proto's own (net/ipv4/bpf_tcp_ca.c): the socket
// helpers take the congestion control's socket.
var tcpCAHelpers = map[int32]helperProto{
	116: {args: []argKind{argBTFID, argAnything}, btfID: "tcp_sock"},                                                                         // bpf_tcp_send_ack
	107: {args: []argKind{argConstMap, argSockCommon, argMapValueOrNull, argAnything}, ret: retMapValueOrNull, maps: []string{"sk_storage"}}, // bpf_sk_storage_get
	108: {args: []argKind{argConstMap, argSockCommon}, maps: []string{"sk_storage"}},                                                         // bpf_sk_storage_delete
	49:  {args: []argKind{argSockCommon, argAnything, argAnything, argMem, argConstSize}},                                                    // bpf_setsockopt
	57:  {args: []argKind{argSockCommon, argAnything, argAnything, argUninitMem, argConstSize}},                                              // bpf_getsockopt
	160: {},                                                                                                                                  // bpf_ktime_get_coarse_ns
}

// baseOnlyProtos are base helpers the tracing prototypes do not list.
var baseOnlyProtos = map[int32]helperProto{
	17:  {},                                                            // bpf_get_cgroup_classid (the current task's)
	105: {args: []argKind{argMem, argConstSize, argAnything, argLong}}, // bpf_strtol
	106: {args: []argKind{argMem, argConstSize, argAnything, argLong}}, // bpf_strtoul
}

// structOpsOffers says whether bpf_base_func_proto offers helper id on this profile (the
// tables' own helpers aside).
func (c *checker) structOpsOffers(id int32) bool {
	if c.so.ops == "bpf_dummy_ops" {
		return false
	}
	return baseHelpers[id] || (baseHelpersLater[id] && c.has(btfmodel.CapHelperBasePidTgid)) ||
		(baseHelpersTracing[id] && c.has(btfmodel.CapHelperBaseTracing))
}

// structOpsHelperProto is the table's verifier_ops.get_func_proto: bpf_dummy_ops has none,
// bpf_tcp_ca adds its socket helpers (setsockopt and getsockopt not from release), the
// others offer bpf_base_func_proto.
func (c *checker) structOpsHelperProto(id int32) (helperProto, bool) {
	switch c.so.ops {
	case "bpf_dummy_ops":
		return helperProto{}, false
	case "tcp_congestion_ops":
		if p, ok := tcpCAHelpers[id]; ok {
			if (id == 49 || id == 57) && c.so.member == "release" {
				return p, false
			}
			return p, true
		}
	}
	if !c.structOpsOffers(id) {
		return helperProto{}, false
	}
	if p, ok := baseOnlyProtos[id]; ok {
		return p, true
	}
	p, ok := helperProtos[id]
	if !ok {
		return p, false
	}
	p.allowed = nil
	return p, true
}

// sched_ext's kfuncs whose use depends on the member (kernel/sched/ext.c, 7.2: the sets
// scx_kfunc_ids_select_cpu, _enqueue_dispatch, _dispatch and _unlocked, admitted by
// scx_kfunc_context_filter for the members that run in their context). The sched_ext
// kfuncs callable from any member (scx_kfunc_ids_any) are in the tracing tables.
var (
	scxSelectCPU       = setOf("select_cpu", "select_cid")
	scxEnqueueDispatch = setOf("select_cpu", "select_cid", "enqueue", "dispatch")
	scxDispatch        = setOf("dispatch")
	// the unlocked context: the members that may sleep (bpf_scx_check_member) and the
	// dumps (the captures: init_task, cpu_online, cgroup_init, init, exit and dump
	// admit scx_bpf_create_dsq; exit_task, enable, running, tick, dispatch, select_cpu,
	// enqueue, cpu_release and update_idle do not)
	scxUnlocked = func() map[string]bool {
		m := setOf("dump", "dump_cpu", "dump_cid", "dump_task")
		for _, ops := range []string{"sched_ext_ops", "sched_ext_ops_cid"} {
			for n := range sleepableStructOpsMembers[ops] {
				m[n] = true
			}
		}
		return m
	}()
)

var scxKfuncs = map[string]struct {
	flags   btfmodel.KfuncFlag
	members map[string]bool
}{
	"scx_bpf_select_cpu_dfl":    {btfmodel.KFRCU, scxSelectCPU},
	"scx_bpf_dsq_insert":        {btfmodel.KFRCU, scxEnqueueDispatch},
	"scx_bpf_dsq_insert_vtime":  {btfmodel.KFRCU, scxEnqueueDispatch},
	"scx_bpf_dispatch_nr_slots": {0, scxDispatch},
	"scx_bpf_dispatch_cancel":   {0, scxDispatch},
	"scx_bpf_dsq_move_to_local": {0, scxDispatch},
	"scx_bpf_create_dsq":        {btfmodel.KFSleepable, scxUnlocked},
}

func setOf(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// scxKfunc is a member-bound sched_ext kfunc for a program of sched_ext_ops.
func (c *checker) scxKfunc(name string) (btfmodel.Kfunc, map[string]bool, bool) {
	if c.so == nil || (c.so.ops != "sched_ext_ops" && c.so.ops != "sched_ext_ops_cid") {
		return btfmodel.Kfunc{}, nil, false
	}
	k, ok := scxKfuncs[name]
	if !ok {
		return btfmodel.Kfunc{}, nil, false
	}
	return btfmodel.Kfunc{Name: name, Flags: k.flags}, k.members, true
}

// qdiscToFree is bpf_qdisc_is_valid_access (net/sched/bpf_qdisc.c): a read of Qdisc_ops
// enqueue's third argument, in whatever size, is a trusted struct bpf_sk_buff_ptr (the
// to_free list a program hands dropped skbs to), ahead of the tracing ctx rules.
func (c *checker) qdiscToFree(off int, write bool) (reg, bool) {
	if c.so == nil || c.so.ops != "Qdisc_ops" || c.so.member != "enqueue" || write || c.ctxArgIdx(off) != 2 {
		return reg{}, false
	}
	var st *btf.Struct
	if c.env.BTF.TypeByName("bpf_sk_buff_ptr", &st) != nil {
		return reg{}, false
	}
	return reg{typ: ptrToBTFID, flags: flagTrusted, btfType: st, v: constScalar(0), path: "to_free"}, true
}
