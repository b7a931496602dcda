package btfmodel

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

func structOpsSpec(t *testing.T, key string) *btf.Spec {
	t.Helper()
	path := filepath.Join("../testdata/kernel", key, "vmlinux.btf.xz")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no BTF for %s", key)
	}
	s, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tcp_congestion_ops in include/net/tcp.h: 6.1 and 6.12 put ssthresh first; 7.2 starts with
// cong_avoid and cong_control and adds cwnd_event_tx_start after cwnd_event.
var tcpCAMembers = map[string][]string{
	"6.1":  {"ssthresh", "cong_avoid", "set_state", "cwnd_event", "in_ack_event", "pkts_acked", "min_tso_segs", "cong_control", "undo_cwnd", "sndbuf_expand", "get_info", "name", "owner", "list", "key", "flags", "init", "release"},
	"6.12": {"ssthresh", "cong_avoid", "set_state", "cwnd_event", "in_ack_event", "pkts_acked", "min_tso_segs", "cong_control", "undo_cwnd", "sndbuf_expand", "get_info", "name", "owner", "list", "key", "flags", "init", "release"},
	"7.2":  {"cong_avoid", "cong_control", "ssthresh", "set_state", "cwnd_event", "cwnd_event_tx_start", "in_ack_event", "pkts_acked", "min_tso_segs", "undo_cwnd", "sndbuf_expand", "get_info", "name", "owner", "list", "key", "flags", "init", "release"},
}

var structOpsKeys = []struct {
	kernel Kernel
	arch   Arch
}{
	{"6.1", AMD64}, {"6.1", ARM64}, {"6.12", AMD64}, {"6.12", ARM64}, {"6.12", RISCV64},
	{"7.2", AMD64}, {"7.2", ARM64}, {"7.2", RISCV64},
}

func TestStructOpsTCPCongestionOps(t *testing.T) {
	for _, c := range structOpsKeys {
		key := string(c.kernel) + "-" + string(c.arch)
		t.Run(key, func(t *testing.T) {
			s := structOpsSpec(t, key)
			names, err := StructOpsMembers(s, "tcp_congestion_ops")
			if err != nil {
				t.Fatal(err)
			}
			if want := tcpCAMembers[string(c.kernel)]; !slices.Equal(names, want) {
				t.Fatalf("members:\n got %v\nwant %v", names, want)
			}
			// bpf_struct_ops_prepare_trampoline: INDIRECT from 6.8 on, RET_FENTRY_RET when
			// ret_size > 0; 6.1 passes RET_FENTRY_RET alone.
			indirect := uint32(0x100)
			if c.kernel == "6.1" {
				indirect = 0
			}
			for _, m := range []struct {
				member string
				nargs  int
				ret    int
				flags  uint32
			}{
				{"cong_avoid", 3, 0, indirect},           // void (*)(struct sock *, u32 ack, u32 acked)
				{"ssthresh", 1, 4, indirect | 0x10},      // u32 (*)(struct sock *)
				{"undo_cwnd", 1, 4, indirect | 0x10},     // u32 (*)(struct sock *)
				{"set_state", 2, 0, indirect},            // void (*)(struct sock *, u8 new_state)
				{"init", 1, 0, indirect},                 // void (*)(struct sock *)
				{"sndbuf_expand", 1, 4, indirect | 0x10}, // u32 (*)(struct sock *)
			} {
				r, err := StructOpsModel(s, "tcp_congestion_ops", m.member, c.kernel, c.arch)
				if err != nil {
					t.Fatal(err)
				}
				if !r.Verdict.OK || r.Verdict.Note != "" {
					t.Errorf("%s: %+v, want OK", m.member, r.Verdict)
				}
				if r.Index != slices.Index(tcpCAMembers[string(c.kernel)], m.member) {
					t.Errorf("%s: index %d", m.member, r.Index)
				}
				if r.Model.Name != m.member || r.Model.NrArgs() != m.nargs || r.Model.RetSize != m.ret || r.Flags != m.flags {
					t.Errorf("%s: %s ret %d flags %#x, want %d args ret %d flags %#x", m.member, r.Model.Prototype(), r.Model.RetSize, r.Flags, m.nargs, m.ret, m.flags)
				}
			}
			// cong_control: (struct sock *, const struct rate_sample *) until 6.10 added
			// u32 ack and int flag in between; int is SIGNED_ARG from 6.3 on.
			r, err := StructOpsModel(s, "tcp_congestion_ops", "cong_control", c.kernel, c.arch)
			if err != nil {
				t.Fatal(err)
			}
			if c.kernel == "6.1" {
				if r.Model.NrArgs() != 2 || r.Model.Args[1].Flags != 0 {
					t.Errorf("6.1 cong_control: %s", r.Model.Prototype())
				}
			} else if r.Model.NrArgs() != 4 || r.Model.Args[2].Flags != SignedArg || r.Model.Args[1].Flags != 0 {
				t.Errorf("cong_control: %s %v", r.Model.Prototype(), r.Model.Args)
			}

			// get_info: bpf_tcp_ca_check_member (6.1) / a NULL cfi stub (later).
			r, err = StructOpsModel(s, "tcp_congestion_ops", "get_info", c.kernel, c.arch)
			if err != nil {
				t.Fatal(err)
			}
			want := Verdict{Type: StructOps, Stage: StageLoad, Errno: "ENOTSUPP", KernelMsg: true,
				Msg: "attach to unsupported member get_info of struct tcp_congestion_ops"}
			if r.Verdict != want {
				t.Errorf("get_info: %+v", r.Verdict)
			}
			// name is a char array: check_struct_ops_btf_id's "invalid member", EINVAL.
			r, err = StructOpsModel(s, "tcp_congestion_ops", "name", c.kernel, c.arch)
			if err != nil {
				t.Fatal(err)
			}
			idx := slices.Index(tcpCAMembers[string(c.kernel)], "name")
			if r.Verdict.OK || r.Verdict.Errno != "EINVAL" || r.Model != nil ||
				r.Verdict.Msg != "attach to invalid member name(@idx "+itoa(idx)+") of struct tcp_congestion_ops" {
				t.Errorf("name: %+v", r.Verdict)
			}
			if _, err := StructOpsModel(s, "tcp_congestion_ops", "no_such_member", c.kernel, c.arch); err == nil {
				t.Error("no_such_member: no error")
			}
			if _, err := StructOpsModel(s, "no_such_ops", "x", c.kernel, c.arch); err == nil {
				t.Error("no_such_ops: no error")
			}
		})
	}
}

// sched_ext_ops exists in 7.2's BTF (CONFIG_SCHED_CLASS_EXT) and not before; a struct with no
// bpf_struct_ops_<name> value type is refused as bpf_struct_ops_find fails.
func TestStructOpsUnregistered(t *testing.T) {
	s := structOpsSpec(t, "6.12-amd64")
	var st *btf.Struct
	if err := s.TypeByName("sock", &st); err != nil {
		t.Fatal(err)
	}
	id, _ := s.TypeID(st)
	r, err := StructOpsModel(s, "sock", "sk_rcvlowat", "6.12", AMD64)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict.OK || r.Verdict.Errno != "ENOTSUPP" || r.Verdict.Msg != "attach_btf_id "+itoa(int(id))+" is not a supported struct" {
		t.Errorf("%+v", r.Verdict)
	}
	if _, err := StructOpsModel(s, "sched_ext_ops", "enqueue", "6.12", AMD64); err == nil {
		t.Error("6.12 sched_ext_ops: no error")
	}
	s = structOpsSpec(t, "7.2-amd64")
	r, err = StructOpsModel(s, "sched_ext_ops", "enqueue", "7.2", AMD64)
	if err != nil {
		t.Fatal(err)
	}
	// void (*enqueue)(struct task_struct *p, u64 enq_flags) (kernel/sched/ext.c)
	if !r.Verdict.OK || r.Verdict.Note != "" || r.Model.NrArgs() != 2 || r.Flags != 0x100 {
		t.Errorf("sched_ext_ops.enqueue: %+v %s %#x", r.Verdict, r.Model.Prototype(), r.Flags)
	}
}

// The tables' own refusals, as Debian's 7.2 kernels gave them under qemu (the struct_ops cases
// of testdata/kernel/7.2-*): Qdisc_ops stubs five members, bpf_dummy_ops' map update fails in
// init_member, and sched_ext's dispatch wants a private stack riscv64's JIT has not.
func TestStructOpsTableRules(t *testing.T) {
	for _, c := range []struct {
		ops, member string
		arch        Arch
		stage       Stage
		errno, msg  string
	}{
		{"Qdisc_ops", "peek", AMD64, StageLoad, "ENOTSUPP", "attach to unsupported member peek of struct Qdisc_ops"},
		{"Qdisc_ops", "egress_block_get", RISCV64, StageLoad, "ENOTSUPP", "attach to unsupported member egress_block_get of struct Qdisc_ops"},
		{"Qdisc_ops", "enqueue", ARM64, "", "", ""},
		{"bpf_dummy_ops", "test_1", AMD64, StageAttach, "EOPNOTSUPP", "bpf_dummy_init_member refuses every member"},
		{"sched_ext_ops", "dispatch", RISCV64, StageLoad, "EACCES", "Private stack not supported by jit"},
		{"sched_ext_ops_cid", "dispatch", RISCV64, StageLoad, "EACCES", "Private stack not supported by jit"},
		{"sched_ext_ops", "dispatch", AMD64, "", "", ""},
		{"sched_ext_ops", "enqueue", RISCV64, "", "", ""},
	} {
		s := structOpsSpec(t, "7.2-"+string(c.arch))
		r, err := StructOpsModel(s, c.ops, c.member, "7.2", c.arch)
		if err != nil {
			t.Fatal(err)
		}
		v := r.Verdict
		if ok := c.errno == ""; v.OK != ok || v.Stage != c.stage || v.Errno != c.errno || !strings.HasPrefix(v.Msg, c.msg) {
			t.Errorf("%s.%s on %s: %+v", c.ops, c.member, c.arch, v)
		}
	}
}
