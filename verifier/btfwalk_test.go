package verifier

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/trampjit/trampjit/btfmodel"
)

// memberOff resolves "a.b.c" in a named struct of the profile's BTF to a byte offset,
// looking through anonymous members.
func memberOff(t testing.TB, key, strct, path string) int16 {
	var s *btf.Struct
	if err := loadSpec(t, key).TypeByName(strct, &s); err != nil {
		t.Fatalf("%s: %v", strct, err)
	}
	var find func(ty btf.Type, name string) (int, btf.Type, bool)
	find = func(ty btf.Type, name string) (int, btf.Type, bool) {
		for _, m := range members(skipMods(ty)) {
			if m.Name == name {
				return int(m.Offset / 8), m.Type, true
			}
			if m.Name == "" {
				if o, mt, ok := find(m.Type, name); ok {
					return int(m.Offset/8) + o, mt, true
				}
			}
		}
		return 0, nil, false
	}
	off := 0
	var ty btf.Type = s
	for _, name := range strings.Split(path, ".") {
		o, mt, ok := find(ty, name)
		if !ok {
			t.Fatalf("%s: %s has no %s", key, strct, path)
		}
		off += o
		ty = mt
	}
	return int16(off)
}

// PTR_TO_BTF_ID dereferences through kernel BTF (check_ptr_to_btf_access, btf_struct_walk).
func TestBTFWalk(t *testing.T) {
	const (
		R0, R1, R2, R3, R4 = asm.R0, asm.R1, asm.R2, asm.R3, asm.R4
		DW, W, H, B        = asm.DWord, asm.Word, asm.Half, asm.Byte
	)
	sk := func(k string) asm.Instruction { return ldx(R2, R1, 0, DW) } // tcp_v4_connect: r2 = sk
	cases := []vcase{
		{name: "nested-member", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(sk(k), ldx(R3, R2, memberOff(t, k, "sock", "__sk_common.skc_family"), H))
		}, want: "ok", loads: []string{"r3 = *(u16 *)(r2 +16) -> sk->__sk_common.skc_family"}},
		{name: "anon-union-member", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(sk(k), ldx(R3, R2, memberOff(t, k, "sock", "__sk_common.skc_rcv_saddr"), W))
		}, want: "ok", loads: []string{"-> sk->__sk_common."}},
		{name: "partial-int-read", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(sk(k), ldx(R3, R2, memberOff(t, k, "sock", "__sk_common.skc_family")+1, B))
		}, want: "ok"},
		{name: "ptr-member-chain", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(sk(k), ldx(R3, R2, memberOff(t, k, "sock", "sk_socket"), DW), ldx(R4, R3, memberOff(t, k, "socket", "state"), W))
		}, want: "ok", loads: []string{"-> sk->sk_socket (PTR_TO_BTF_ID socket)", "-> sk->sk_socket->state"}},
		{name: "ptr-member-misaligned", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(sk(k), ldx(R3, R2, memberOff(t, k, "sock", "sk_socket")+4, W))
		}, want: "cannot access ptr member sk_socket with moff ..."},
		{name: "beyond-struct", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			var s *btf.Struct
			loadSpec(t, k).TypeByName("sock", &s)
			return ret0(sk(k), ldx(R3, R2, int16(s.Size), DW))
		}, want: "access beyond struct sock at off ..."},
		{name: "negative", sec: "fentry/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, -8, DW))...),
			want: "R2 is ptr_sock invalid negative access: off=-8"},
		{name: "const-arith-then-load", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(sk(k), addi(R2, int32(memberOff(t, k, "sock", "__sk_common.skc_family"))), ldx(R3, R2, 0, H))
		}, want: "ok", loads: []string{"-> sk->__sk_common.skc_family"}},
		{name: "arith-back-to-zero", sec: "fentry/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 0, DW), addi(R2, 16), addi(R2, -16), ldx(R3, R2, 16, H))...), want: "ok"},
		{name: "write", sec: "fentry/tcp_v4_connect", prog: fixed(ret0(ldx(R2, R1, 0, DW), st(R2, 16, 0, H))...),
			want: "only read is supported"},
		{name: "array-element", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(call(asm.FnGetCurrentTaskBtf), ldx(R3, R0, memberOff(t, k, "task_struct", "comm")+8, DW))
		}, want: "ok", loads: []string{"-> current->comm[8]"}},
		{name: "array-past-member-end", sec: "fentry/tcp_v4_connect", prog: func(k string) asm.Instructions {
			return ret0(call(asm.FnGetCurrentTaskBtf), ldx(R3, R0, memberOff(t, k, "task_struct", "comm")+12, DW))
		}, want: "access beyond the end of member comm (mend:..."},
		{name: "maybe-null-deref", sec: "lsm/socket_post_create", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, memberOff(t, k, "socket", "sk"), DW), ldx(R4, R3, 0, DW))
		}, want61: "ok", want: "R3 invalid mem access 'trusted_ptr_or_null_'"},
		{name: "maybe-null-checked", sec: "lsm/socket_post_create", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, memberOff(t, k, "socket", "sk"), DW), jmpi(asm.JEq, R3, 0, 1), ldx(R4, R3, 0, DW))
		}, want: "ok"},
		{name: "maybe-null-arith", sec: "lsm/socket_post_create", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, memberOff(t, k, "socket", "sk"), DW), addi(R3, 8))
		}, want61: "ok", want: "R3 pointer arithmetic on trusted_ptr_or_null_ prohibited, null-check it first"},
		// Trust of pointers read from a trusted LSM argument (6.12): safe fields stay trusted,
		// others become plain in an RCU section (non-sleepable) and untrusted outside it.
		{name: "lsm-safe-trusted-field", sec: "lsm/file_open", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, memberOff(t, k, "file", "f_inode"), DW))
		}, want: "ok", logHas61: []string{"R3_w=ptr_inode(off=0,imm=0)"}, logHas612: []string{"R3_w=trusted_ptr_inode()"}},
		{name: "lsm-plain-field", sec: "lsm/file_open", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, memberOff(t, k, "file", "f_path.dentry"), DW))
		}, want: "ok", logHas61: []string{"R3_w=ptr_dentry(off=0,imm=0)"}, logHas612: []string{"R3_w=ptr_dentry()"},
			loads: []string{"-> file->f_path.dentry (PTR_TO_BTF_ID dentry)"}},
		{name: "lsm-sleepable-untrusted-field", sec: "lsm.s/file_open", prog: func(k string) asm.Instructions {
			return ret0(ldx(R2, R1, 0, DW), ldx(R3, R2, memberOff(t, k, "file", "f_path.dentry"), DW), ldx(R4, R3, 0, W))
		}, want: "ok", logHas612: []string{"R3_w=untrusted_ptr_dentry()"}, loads: []string{"(PTR_TO_BTF_ID dentry"}},
		// From the trusted current task (6.12): RCU-safe fields in an RCU section, plain
		// otherwise, untrusted in a sleepable program.
		{name: "task-rcu-field", sec: "fentry/bpf_fentry_test1", prog: func(k string) asm.Instructions {
			return ret0(call(asm.FnGetCurrentTaskBtf), ldx(R2, R0, memberOff(t, k, "task_struct", "real_parent"), DW))
		}, want: "ok", logHas61: []string{"R2_w=ptr_task_struct(off=0,imm=0)"}, logHas612: []string{"R2_w=rcu_ptr_task_struct()"}},
		{name: "task-plain-field", sec: "fentry/bpf_fentry_test1", prog: func(k string) asm.Instructions {
			return ret0(call(asm.FnGetCurrentTaskBtf), ldx(R2, R0, memberOff(t, k, "task_struct", "mm"), DW))
		}, want: "ok", logHas61: []string{"R2_w=ptr_mm_struct(off=0,imm=0)"}, logHas612: []string{"R2_w=ptr_mm_struct()"}},
		{name: "task-sleepable-field", sec: "fentry.s/bpf_fentry_test1", errInj: map[string][]string{"6.1": {"bpf_fentry_test1"}}, prog: func(k string) asm.Instructions {
			return ret0(call(asm.FnGetCurrentTaskBtf), ldx(R2, R0, memberOff(t, k, "task_struct", "real_parent"), DW))
		}, want: "ok", logHas612: []string{"R2_w=untrusted_ptr_task_struct()"}},
		{name: "lsm-sleepable-hook", sec: "lsm.s/task_free", prog: fixed(exit()), want: "bpf_lsm_task_free is not sleepable"},
		{name: "non-gpl-deref", sec: "fentry/tcp_v4_connect", license: "Dual BSD", prog: func(k string) asm.Instructions {
			return ret0(sk(k), ldx(R3, R2, 16, H))
		}, want61: "ok", want: "Cannot access kernel 'struct sock' from non-GPL compatible program"},
	}
	runCases(t, cases)
}

// Walk rules on synthetic types, called directly (btf_struct_walk).
func TestStructWalkSynthetic(t *testing.T) {
	u32 := &btf.Int{Name: "u32", Size: 4}
	u64 := &btf.Int{Name: "u64", Size: 8}
	inner := &btf.Struct{Name: "inner", Size: 8, Members: []btf.Member{{Name: "x", Type: u32}, {Name: "y", Type: u32, Offset: 32}}}
	un := &btf.Union{Name: "u", Size: 8, Members: []btf.Member{{Name: "a", Type: u32}, {Name: "b", Type: u64}}}
	flexInt := &btf.Struct{Name: "fi", Size: 8, Members: []btf.Member{{Name: "n", Type: u64}, {Name: "data", Type: &btf.Array{Type: u32, Nelems: 0}, Offset: 64}}}
	flexStruct := &btf.Struct{Name: "fs", Size: 8, Members: []btf.Member{{Name: "n", Type: u64}, {Name: "items", Type: &btf.Array{Type: inner, Nelems: 0}, Offset: 64}}}
	matrix := &btf.Struct{Name: "mx", Size: 32, Members: []btf.Member{{Name: "m", Type: &btf.Array{Type: &btf.Array{Type: inner, Nelems: 2}, Nelems: 2}}}}
	holey := &btf.Struct{Name: "holey", Size: 16, Members: []btf.Member{{Name: "a", Type: u32}, {Name: "b", Type: u64, Offset: 64}}}
	bits := &btf.Struct{Name: "bits", Size: 4, Members: []btf.Member{{Name: "f", Type: u32, Offset: 3, BitfieldSize: 4}, {Name: "g", Type: u32, Offset: 8, BitfieldSize: 20}}}
	fwd := &btf.Struct{Name: "hasfwd", Size: 8, Members: []btf.Member{{Name: "f", Type: &btf.Fwd{Name: "opaque"}}}}
	nested := &btf.Struct{Name: "outer", Size: 16, Members: []btf.Member{{Name: "pad", Type: u64}, {Name: "in", Type: inner, Offset: 64}}}
	cases := []struct {
		kern      btfmodel.Kernel
		typ       btf.Type
		off, size int
		want      string // "scalar <path>", "struct <path>", "ptr", or the message
	}{
		{"6.12", inner, 4, 4, "scalar y"},
		{"6.12", nested, 8, 8, "struct in"},
		{"6.12", nested, 12, 4, "scalar in.y"},
		{"6.12", un, 0, 8, "scalar a"}, // union: untrusted, so the int may be over-read
		{"6.1", un, 0, 8, "access beyond the end of member a (mend:4) in struct u with off 0 size 8"}, // 6.1: no union rule
		{"6.12", flexInt, 12, 4, "scalar data[]"},
		{"6.1", flexInt, 12, 4, "access beyond struct fi at off 12 size 4"},
		{"6.1", flexStruct, 20, 4, "scalar items[1].y"},
		{"6.12", matrix, 24, 4, "struct m[3]"}, // element start: the caller dives in at 0
		{"6.12", matrix, 28, 4, "scalar m[3].y"},
		{"6.12", holey, 4, 4, "struct holey doesn't have field at offset 4"},
		{"6.12", bits, 0, 1, "scalar f"},
		{"6.12", bits, 1, 1, "struct bits doesn't have field at offset 1"},
		{"6.12", bits, 0, 4, "scalar f"},
		{"6.12", fwd, 0, 8, "field f doesn't have size"},
		{"6.12", u64, 0, 8, "Type 'u64' is not a struct"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s/%d/%d", tc.kern, btfName(tc.typ), tc.off, tc.size), func(t *testing.T) {
			c := &checker{env: Env{Kernel: tc.kern}, prog: &Program{}}
			var flags typeFlag
			res, next, path, err := c.structWalk(tc.typ, tc.off, tc.size, &flags)
			var got string
			switch {
			case err != nil:
				got = c.lastMsg
			case res == walkScalar:
				got = "scalar " + path
			case res == walkStruct:
				got = "struct " + path
			default:
				got = "ptr " + btfName(next)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
