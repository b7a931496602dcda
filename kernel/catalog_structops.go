package kernel

import (
	"fmt"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// structOpsRecipe is how the agent builds one ops table's map (kernel/agent/structops.go).
type structOpsRecipe struct {
	maps int  // maps of the table per boot: two tcp_congestion_ops, so that two names are in kallsyms
	link bool // BPF_F_LINK: the update builds the images without registering the table
	// data members init_member requires, per map (a name a map's table registers under)
	data      func(m int) map[string]string
	sleepable []string          // members loaded sleepable (the table's check_member allows them)
	release   map[string]string // members whose referenced argument the program must release
}

// structOpsRecipes: tcp_congestion_ops registers for real (tcp_register_congestion_control
// needs ssthresh, undo_cwnd and cong_avoid or cong_control, and a unique name). The other
// tables cannot register in a bare guest (bpf_dummy_ops has no reg, sched_ext would take over
// the scheduler, a Qdisc_ops or hid_bpf_ops needs a device), so their maps are BPF_F_LINK
// maps: bpf_struct_ops_map_update_elem builds every image and stops before reg.
var structOpsRecipes = map[string]structOpsRecipe{
	"tcp_congestion_ops": {maps: 2, data: func(m int) map[string]string {
		return map[string]string{"name": fmt.Sprintf("tj_ca%d", m)}
	}},
	"bpf_dummy_ops": {maps: 1, link: true, sleepable: []string{"test_sleepable"}},
	// bpf_scx_check_member lets init_task, cpu_online/offline, init and exit sleep.
	"sched_ext_ops":     {maps: 1, link: true, data: named("tj_scx"), sleepable: []string{"init_task", "init", "exit"}},
	"sched_ext_ops_cid": {maps: 1, link: true, data: named("tj_scx_cid"), sleepable: []string{"init_task", "init", "exit"}},
	// bpf_qdisc_init_member needs an id; enqueue gets a referenced skb it must drop or queue.
	"Qdisc_ops": {maps: 1, link: true, data: func(int) map[string]string { return map[string]string{"id": "tj_qdisc"} },
		release: map[string]string{"enqueue": "bpf_qdisc_skb_drop"}},
	"io_uring_bpf_ops": {maps: 1, link: true},
	"hid_bpf_ops":      {maps: 1, link: true},
}

func named(n string) func(int) map[string]string {
	return func(int) map[string]string { return map[string]string{"name": n} }
}

// The function-pointer members of each table, in index order, as each profile's BTF has them
// (TestStructOpsCatalogMatchesBTF checks them against testdata/kernel/*/vmlinux.btf.xz).
var (
	tcpCongOps6 = []string{"ssthresh", "cong_avoid", "set_state", "cwnd_event", "in_ack_event", "pkts_acked",
		"min_tso_segs", "cong_control", "undo_cwnd", "sndbuf_expand", "get_info", "init", "release"}
	// 7.2 adds cwnd_event_tx_start and moves cong_avoid and cong_control first.
	tcpCongOps72 = []string{"cong_avoid", "cong_control", "ssthresh", "set_state", "cwnd_event", "cwnd_event_tx_start",
		"in_ack_event", "pkts_acked", "min_tso_segs", "undo_cwnd", "sndbuf_expand", "get_info", "init", "release"}
	dummyOps  = []string{"test_1", "test_2", "test_sleepable"}
	schedExt  = []string{"select_cpu", "enqueue", "dequeue", "dispatch", "tick", "runnable", "running", "stopping", "quiescent", "yield", "core_sched_before", "set_weight", "set_cpumask", "update_idle", "init_task", "exit_task", "enable", "disable", "dump", "dump_cpu", "dump_task", "cgroup_init", "cgroup_exit", "cgroup_prep_move", "cgroup_move", "cgroup_cancel_move", "cgroup_set_weight", "cgroup_set_bandwidth", "cgroup_set_idle", "sub_attach", "sub_detach", "cpu_online", "cpu_offline", "init", "exit", "cpu_acquire", "cpu_release"}
	schedExtC = []string{"select_cid", "enqueue", "dequeue", "dispatch", "tick", "runnable", "running", "stopping", "quiescent", "yield", "core_sched_before", "set_weight", "set_cmask", "update_idle", "init_task", "exit_task", "enable", "disable", "dump", "dump_cid", "dump_task", "cgroup_init", "cgroup_exit", "cgroup_prep_move", "cgroup_move", "cgroup_cancel_move", "cgroup_set_weight", "cgroup_set_bandwidth", "cgroup_set_idle", "sub_attach", "sub_detach", "cid_online", "cid_offline", "init", "exit"}
	qdiscOps  = []string{"enqueue", "dequeue", "peek", "init", "reset", "destroy", "change", "attach", "change_tx_queue_len", "change_real_num_tx", "dump", "dump_stats", "ingress_block_set", "egress_block_set", "ingress_block_get", "egress_block_get"}
	ioUring   = []string{"loop_step"}
	hidOps    = []string{"hid_device_event", "hid_rdesc_fixup", "hid_hw_request", "hid_hw_output_report"}
)

// structOpsTable is one table a profile's Debian build has (bpf_struct_ops_<ops> in its BTF).
type structOpsTable struct {
	ops     string
	members []string
}

// structOpsTables lists, per profile (and architecture where the builds differ), the tables
// the catalog captures (6.1's bpf_dummy_ops is left out: structOpsSkipped).
func structOpsTables(kernel, arch string) []structOpsTable {
	switch btfmodel.Kernel(kernel) {
	case btfmodel.Kernel61:
		return []structOpsTable{{"tcp_congestion_ops", tcpCongOps6}}
	case btfmodel.Kernel612:
		return []structOpsTable{{"tcp_congestion_ops", tcpCongOps6}, {"bpf_dummy_ops", dummyOps}}
	case btfmodel.Kernel72:
		t := []structOpsTable{{"tcp_congestion_ops", tcpCongOps72}, {"bpf_dummy_ops", dummyOps},
			{"sched_ext_ops", schedExt}, {"sched_ext_ops_cid", schedExtC}, {"Qdisc_ops", qdiscOps}, {"io_uring_bpf_ops", ioUring}}
		if arch == "riscv64" { // HID_BPF=y only in Debian's riscv64 7.2 build
			t = append(t, structOpsTable{"hid_bpf_ops", hidOps})
		}
		return t
	}
	return nil
}

// structOpsSkipped is the table a profile's build has but no map can build: 6.1's
// bpf_dummy_ops has no BPF_F_LINK (6.4) and no reg, so its images exist only inside
// BPF_PROG_TEST_RUN (bpf_struct_ops_test_run builds one and frees it before returning).
func structOpsSkipped(kernel string) string {
	if btfmodel.Kernel(kernel) == btfmodel.Kernel61 {
		return "bpf_dummy_ops"
	}
	return ""
}

// structOpsWire is map m of table ops as the agent builds it, from its recipe (Member unset).
func structOpsWire(ops string, m int) wire.StructOpsCase {
	rc, ok := structOpsRecipes[ops]
	if !ok {
		return wire.StructOpsCase{Ops: ops, Map: m, Link: true}
	}
	so := wire.StructOpsCase{Ops: ops, Map: m, Link: rc.link, Sleepable: rc.sleepable, Release: rc.release}
	if rc.data != nil {
		so.Data = rc.data(m)
	}
	return so
}

// StructOpsCatalog is the struct_ops part of the corpus catalogue: one case per member of
// every map of every table the profile's build has, ids struct_ops-<ops>-<member> (the
// second map of a table: struct_ops-<ops>.2-<member>). Members the kernel refuses are in it
// too: their refusals are cases. A capture takes each table whole (planStructOps): the
// members are the guest's own, these lists only the profile's.
func StructOpsCatalog(kernel, arch string) []Case {
	var out []Case
	for _, t := range structOpsTables(kernel, arch) {
		rc := structOpsRecipes[t.ops]
		for m := 1; m <= rc.maps; m++ {
			name := t.ops
			if m > 1 {
				name = fmt.Sprintf("%s.%d", t.ops, m)
			}
			for _, mem := range t.members {
				so := structOpsWire(t.ops, m)
				so.Member = mem
				p := jit.Prog{Kind: jit.StructOpsProg, Sleepable: contains(rc.sleepable, mem)}
				out = append(out, Case{ID: "struct_ops-" + name + "-" + mem, Func: t.ops + "." + mem, Progs: []jit.Prog{p}, StructOps: &so})
			}
		}
	}
	return out
}

// FullCatalog is Catalog and StructOpsCatalog: what `trampjit kernel cases` lists and
// `kernel capture` captures by default.
func FullCatalog(kernel, arch string) []Case {
	return append(Catalog(kernel, arch), StructOpsCatalog(kernel, arch)...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
