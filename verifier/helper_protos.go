package verifier

import "github.com/trampjit/trampjit/btfmodel"

// The helper prototypes tracing and LSM programs see (struct bpf_func_proto): from
// bpf_tracing_func_proto, tracing_prog_func_proto and raw_tp_prog_func_proto
// (kernel/trace/bpf_trace.c), bpf_lsm_func_proto (kernel/bpf/bpf_lsm.c) and
// bpf_base_func_proto (kernel/bpf/helpers.c). The map-type rules are
// check_map_func_compatibility (kernel/bpf/verifier.c).

type argKind int

const (
	argDontCare argKind = iota
	argAnything
	argCtx
	argConstMap
	argMapKey
	argMapValue
	argUninitMapValue  // ARG_PTR_TO_MAP_VALUE | MEM_UNINIT (map_pop/peek_elem)
	argMapValueOrNull  // ARG_PTR_TO_MAP_VALUE_OR_NULL: a storage's initial value, or NULL
	argMem             // readable memory, size in the next argument
	argMemOrNull       // ARG_PTR_TO_MEM | PTR_MAYBE_NULL | MEM_RDONLY (bpf_snprintf's data)
	argUninitMem       // memory the helper writes, size in the next argument
	argConstSize       // ARG_CONST_SIZE
	argConstSizeOrZero // ARG_CONST_SIZE_OR_ZERO
	argAllocSize       // ARG_CONST_ALLOC_SIZE_OR_ZERO: a known constant (bpf_ringbuf_reserve)
	argLong            // 8 bytes the helper writes (6.1 ARG_PTR_TO_LONG, 6.12 fixed-size uninit memory)
	argBTFID           // ARG_PTR_TO_BTF_ID of proto.btfID
	argBTFIDOrNull     // ARG_PTR_TO_BTF_ID_OR_NULL (6.1: ARG_PTR_TO_BTF_ID for the storage owners)
	argSockCommon      // ARG_PTR_TO_BTF_ID_SOCK_COMMON
	argRingbufMem      // ARG_PTR_TO_RINGBUF_MEM | OBJ_RELEASE (6.1 ARG_PTR_TO_ALLOC_MEM)
	argSpinLock        // ARG_PTR_TO_SPIN_LOCK
	argConstStr        // ARG_PTR_TO_CONST_STR: a read-only map value
)

type retKind int

const (
	retInt retKind = iota
	retVoid
	retMapValueOrNull
	retTaskBTF
	retRingbufMemOrNull // RET_PTR_TO_RINGBUF_MEM_OR_NULL, acquired
	retBTFID            // RET_PTR_TO_BTF_ID of proto.retBTF
	retBTFIDOrNull      // RET_PTR_TO_BTF_ID_OR_NULL of proto.retBTF (the socket casts)
)

type helperProto struct {
	args       []argKind
	ret        retKind
	btfID      string // the struct argBTFID and argBTFIDOrNull want
	retBTF     string
	gplOnly    bool
	trampOnly  bool // bpf_prog_has_trampoline: fentry/fexit/fmod_ret, LSM
	sleepOnly  bool // 6.1 offers it to sleepable programs only
	mightSleep bool // 6.12: refused in non-sleepable programs
	lsmOnly    bool // offered by bpf_lsm_func_proto alone
	// allowed is bpf_func_proto.allowed: false is "helper call is not allowed in probe".
	allowed func(c *checker) bool
	// maps are the map types the helper's map argument may be (check_map_func_compatibility's
	// func_id switch); nil: any map not reserved to other helpers.
	maps []string
}

var (
	fdSize       = []argKind{argUninitMem, argConstSizeOrZero, argAnything}
	storageGet   = []argKind{argConstMap, argBTFIDOrNull, argMapValueOrNull, argAnything}
	storageDel   = []argKind{argConstMap, argBTFIDOrNull}
	perfEvArray  = []string{"perf_event_array"}
	ringbufMaps  = []string{"ringbuf"}
	percpuLookup = []string{"percpu_array", "percpu_hash", "lru_percpu_hash"}
)

// helperProtos are the modelled helpers, by id.
var helperProtos = map[int32]helperProto{
	1:   {args: []argKind{argConstMap, argMapKey}, ret: retMapValueOrNull},
	2:   {args: []argKind{argConstMap, argMapKey, argMapValue, argAnything}},
	3:   {args: []argKind{argConstMap, argMapKey}},
	5:   {},
	6:   {args: []argKind{argMem, argConstSize}, gplOnly: true},
	7:   {},
	8:   {},
	14:  {},
	15:  {},
	16:  {args: []argKind{argUninitMem, argConstSize}},
	4:   {args: fdSize, gplOnly: true}, // bpf_probe_read_compat (CONFIG_ARCH_HAS_NON_OVERLAPPING_ADDRESS_SPACE: both arches)
	22:  {args: []argKind{argConstMap, argAnything}, gplOnly: true, maps: perfEvArray},
	25:  {args: []argKind{argCtx, argConstMap, argAnything, argMem, argConstSizeOrZero}, gplOnly: true, maps: perfEvArray},
	27:  {args: []argKind{argCtx, argConstMap, argAnything}, gplOnly: true, maps: []string{"stack_trace"}},
	35:  {gplOnly: true},
	36:  {args: []argKind{argAnything, argMem, argConstSize}, gplOnly: true},
	37:  {args: []argKind{argConstMap, argAnything}, maps: []string{"cgroup_array"}},
	42:  {},
	45:  {args: fdSize, gplOnly: true},
	46:  {args: []argKind{argSockCommon}}, // bpf_get_socket_ptr_cookie_proto
	136: skcTo("tcp6_sock"),
	137: skcTo("tcp_sock"),
	138: skcTo("tcp_timewait_sock"),
	139: skcTo("tcp_request_sock"),
	140: skcTo("udp6_sock"),
	162: {args: []argKind{argBTFID}, btfID: "file", ret: retBTFIDOrNull, retBTF: "socket"},
	176: {args: fdSize, gplOnly: true}, // bpf_get_branch_snapshot
	177: {args: []argKind{argMem, argConstSize, argMemOrNull, argConstSizeOrZero}, gplOnly: true},
	178: skcTo("unix_sock"),
	182: {args: []argKind{argMem, argConstSize, argConstStr}}, // bpf_strncmp
	55:  {args: []argKind{argConstMap, argAnything, argUninitMem, argConstSize}, gplOnly: true, maps: perfEvArray},
	67:  {args: []argKind{argCtx, argUninitMem, argConstSizeOrZero, argAnything}, gplOnly: true},
	80:  {},
	87:  {args: []argKind{argConstMap, argMapValue, argAnything}, maps: []string{"queue", "stack", "bloom_filter"}},
	88:  {args: []argKind{argConstMap, argUninitMapValue}, maps: []string{"queue", "stack"}},
	89:  {args: []argKind{argConstMap, argUninitMapValue}, maps: []string{"queue", "stack", "bloom_filter"}},
	93:  {args: []argKind{argSpinLock}, ret: retVoid},
	94:  {args: []argKind{argSpinLock}, ret: retVoid},
	107: {args: []argKind{argConstMap, argBTFIDOrNull, argMapValueOrNull, argAnything}, ret: retMapValueOrNull, btfID: "sock", maps: []string{"sk_storage"}, allowed: skStorageTracingAllowed},
	108: {args: []argKind{argConstMap, argBTFID}, btfID: "sock", maps: []string{"sk_storage"}, allowed: skStorageTracingAllowed},
	109: {args: []argKind{argAnything}},
	112: {args: fdSize, gplOnly: true},
	113: {args: fdSize, gplOnly: true},
	114: {args: fdSize, gplOnly: true},
	115: {args: fdSize, gplOnly: true},
	117: {args: []argKind{argAnything}},
	118: {},
	120: {args: []argKind{argAnything, argAnything, argUninitMem, argConstSize}},
	123: {args: []argKind{argAnything}},
	125: {},
	130: {args: []argKind{argConstMap, argMem, argConstSizeOrZero, argAnything}, maps: ringbufMaps},
	131: {args: []argKind{argConstMap, argAllocSize, argAnything}, ret: retRingbufMemOrNull, maps: ringbufMaps},
	132: {args: []argKind{argRingbufMem, argAnything}, ret: retVoid},
	133: {args: []argKind{argRingbufMem, argAnything}, ret: retVoid},
	134: {args: []argKind{argConstMap, argAnything}, maps: ringbufMaps},
	141: {args: []argKind{argBTFID, argUninitMem, argConstSizeOrZero, argAnything}, btfID: "task_struct"},
	145: {args: storageGet, ret: retMapValueOrNull, btfID: "inode", lsmOnly: true, maps: []string{"inode_storage"}},
	146: {args: storageDel, btfID: "inode", lsmOnly: true, maps: []string{"inode_storage"}},
	147: {args: []argKind{argBTFID, argUninitMem, argConstSizeOrZero}, btfID: "path", allowed: dPathAllowed},
	148: {args: fdSize, gplOnly: true, sleepOnly: true, mightSleep: true},
	149: {args: []argKind{argUninitMem, argConstSize, argMem, argConstSize, argAnything}, gplOnly: true},
	156: {args: storageGet, ret: retMapValueOrNull, btfID: "task_struct", maps: []string{"task_storage"}},
	157: {args: storageDel, btfID: "task_struct", maps: []string{"task_storage"}},
	158: {ret: retTaskBTF, gplOnly: true},
	165: {args: []argKind{argUninitMem, argConstSizeOrZero, argConstStr, argMemOrNull, argConstSizeOrZero}, gplOnly: true},
	173: {args: []argKind{argCtx}},
	174: {args: []argKind{argCtx}, trampOnly: true},
	175: {args: []argKind{argBTFID}, ret: retBTFID, btfID: "task_struct", retBTF: "pt_regs", gplOnly: true},
	183: {args: []argKind{argCtx, argAnything, argLong}, trampOnly: true},
	184: {args: []argKind{argCtx, argLong}, trampOnly: true},
	185: {args: []argKind{argCtx}, trampOnly: true},
	191: {args: []argKind{argUninitMem, argConstSizeOrZero, argAnything, argBTFID, argAnything}, btfID: "task_struct", gplOnly: true, sleepOnly: true, mightSleep: true},
	195: {args: []argKind{argConstMap, argMapKey, argAnything}, ret: retMapValueOrNull, maps: percpuLookup},
	208: {},
	210: {args: storageGet, ret: retMapValueOrNull, btfID: "cgroup", maps: []string{"cgrp_storage"}},
	211: {args: storageDel, btfID: "cgroup", maps: []string{"cgrp_storage"}},
}

// skcTo is a bpf_skc_to_* cast: any socket pointer in, the struct or NULL out.
func skcTo(name string) helperProto {
	return helperProto{args: []argKind{argSockCommon}, ret: retBTFIDOrNull, retBTF: name}
}

// lsmProtos replace a tracing prototype for LSM programs (bpf_lsm_func_proto): the socket
// storage helpers take any socket pointer there, and no allowed() check applies.
var lsmProtos = map[int32]helperProto{
	107: {args: []argKind{argConstMap, argSockCommon, argMapValueOrNull, argAnything}, ret: retMapValueOrNull, maps: []string{"sk_storage"}},
	108: {args: []argKind{argConstMap, argSockCommon}, maps: []string{"sk_storage"}},
}

// availableUnmodelled are helpers tracing/LSM programs may call whose argument rules the
// model does not check: the call is accepted with R0 unknown, and a note says so. None is
// what tracing tools call; KNOWN_GAPS.md lists them.
var availableUnmodelled = map[int32]bool{
	12:  true,            // bpf_tail_call: prog_array maps
	111: true, 121: true, // bpf_skb_output, bpf_xdp_output
	196: true,            // bpf_skc_to_mptcp_sock
	153: true, 154: true, // bpf_per_cpu_ptr, bpf_this_cpu_ptr: percpu ksyms
	// Callbacks: for_each_map_elem and loop go to callback.go. bpf_find_vma (180) would take
	// the same path there: ARG_PTR_TO_BTF_ID task, ARG_ANYTHING addr, ARG_PTR_TO_FUNC
	// callback(task, vma, ctx) returning [0, 1], ARG_PTR_TO_STACK_OR_NULL ctx, flags.
	164: true, 181: true, 180: true, 209: true,
	169: true, 170: true, 171: true, 172: true, // bpf_timer_*
	194: true,                                                                   // bpf_kptr_xchg
	197: true, 198: true, 199: true, 200: true, 201: true, 202: true, 203: true, // dynptrs
}

// lsmOnlyUnmodelled are LSM-only helpers (bprm_opts_set, ima hashes).
var lsmOnlyUnmodelled = map[int32]bool{159: true, 161: true, 193: true}

// mapOnlyFuncs is check_map_func_compatibility's map_type switch: the helpers a map of
// that type may be passed to.
var mapOnlyFuncs = map[string][]int32{
	"prog_array":       {12},
	"perf_event_array": {22, 25, 55, 111, 121},
	"ringbuf":          {130, 131, 134, 198, 199, 200},
	"user_ringbuf":     {209},
	"stack_trace":      {27},
	"cgroup_array":     {37, 43},
	"queue":            {87, 88, 89},
	"stack":            {87, 88, 89},
	"bloom_filter":     {87, 89},
	"sk_storage":       {107, 108, 194},
	"inode_storage":    {145, 146, 194},
	"task_storage":     {156, 157, 194},
	"cgrp_storage":     {210, 211, 194},
}

// mapTypeNames is enum bpf_map_type, lower case without BPF_MAP_TYPE_.
var mapTypeNames = []string{"unspec", "hash", "array", "prog_array", "perf_event_array",
	"percpu_hash", "percpu_array", "stack_trace", "cgroup_array", "lru_hash", "lru_percpu_hash",
	"lpm_trie", "array_of_maps", "hash_of_maps", "devmap", "sockmap", "cpumap", "xskmap",
	"sockhash", "cgroup_storage", "reuseport_sockarray", "percpu_cgroup_storage", "queue",
	"stack", "sk_storage", "devmap_hash", "struct_ops", "ringbuf", "inode_storage",
	"task_storage", "bloom_filter", "user_ringbuf", "cgrp_storage", "arena"}

func mapTypeName(n uint32) string {
	if int(n) < len(mapTypeNames) {
		return mapTypeNames[n]
	}
	return ""
}

// mapTypeNum is the map type's number for "cannot pass map_type %d".
func mapTypeNum(name string) int {
	for i, n := range mapTypeNames {
		if n == name {
			return i
		}
	}
	return 0
}

// skStorageTracingAllowed is bpf_sk_storage_tracing_allowed (net/core/bpf_sk_storage.c):
// fentry/fexit programs not attached to the socket storage code itself; fmod_ret is not.
func skStorageTracingAllowed(c *checker) bool {
	switch c.prog.AttachType {
	case btfmodel.Fentry, btfmodel.Fexit:
		return len(c.prog.Target) < 14 || c.prog.Target[:14] != "bpf_sk_storage"
	case btfmodel.RawTP:
		return true
	}
	return false
}

// dPathAllowed is bpf_d_path_allowed (kernel/trace/bpf_trace.c): LSM programs on the
// sleepable hooks (bpf_lsm_is_sleepable_hook), tracing programs on btf_allowlist_d_path.
func dPathAllowed(c *checker) bool {
	if c.prog.AttachType == btfmodel.LSM {
		return btfmodel.LSMSleepableHook(c.prog.Target)
	}
	return dPathAllowlist[c.prog.Target]
}

// dPathAllowlist is btf_allowlist_d_path.
var dPathAllowlist = map[string]bool{
	"security_file_permission": true, "security_inode_getattr": true, "security_file_open": true,
	"security_path_truncate": true, "vfs_truncate": true, "vfs_fallocate": true,
	"dentry_open": true, "vfs_getattr": true, "filp_close": true,
}
