// Package verifier models the kernel verifier for trampoline-attached programs (fentry,
// fexit, fmod_ret, LSM, tp_btf, and struct_ops programs implementing a member of an ops
// table: tcp_congestion_ops, bpf_dummy_ops, sched_ext_ops, Qdisc_ops, hid_bpf_ops; see
// structops.go) on the Linux 6.1, 6.12 and 7.2 profiles: attach checks (reusing
// btfmodel.CheckAttach), ctx access (btf_ctx_access), PTR_TO_BTF_ID walks
// (btf_struct_walk), register and stack tracking, the helpers such programs call, and
// return codes. The rules follow kernel/bpf/verifier.c (bpf_check_attach_target,
// check_mem_access, check_helper_call, check_return_code) and kernel/bpf/btf.c
// (btf_ctx_access, btf_struct_walk) of each profile; what is not modelled is in KNOWN_GAPS.md.
// Env.Arch (amd64, arm64, riscv64) decides what the verifier asks of the architecture,
// stated in btfmodel.VerifierFor: riscv64's strict alignment (no
// HAVE_EFFICIENT_UNALIGNED_ACCESS), which JITs build private stacks and exceptions.
//
// Check(prog, env) returns the verdict, the kernel's last error line, a kernel-style log
// (instruction lines as print_bpf_insn prints them, state dumps as print_verifier_state,
// the final "processed N insns" line) and, for accepted programs, one explanation per ctx
// or BTF load:
//
//	r2 = ctx[0] (struct sock *) -> PTR_TO_BTF_ID sock
//	r3 = *(u16 *)(r2 +16) -> sk->__sk_common.skc_family
//
// # JSON input
//
// ParseJSON reads a list of programs:
//
//	{"programs": [{
//	  "name": "count_connect",
//	  "section": "fentry/tcp_v4_connect",
//	  "license": "GPL",
//	  "maps": [{"name": "counts", "type": "hash", "key_size": 4, "value_size": 8, "max_entries": 64}],
//	  "insns": [
//	    "r6 = *(u64 *)(r1 +0)",
//	    "r2 = *(u16 *)(r6 +16)",
//	    "if r2 != 0x2 goto out",
//	    "*(u32 *)(r10 -4) = 0",
//	    "r1 = map[counts]",
//	    "r2 = r10",
//	    "r2 += -4",
//	    "call bpf_map_lookup_elem",
//	    "if r0 == 0x0 goto out",
//	    "lock *(u64 *)(r0 +0) += r6",
//	    "out:",
//	    "r0 = 0",
//	    "exit"
//	  ]}]}
//
// Fields: name; section as libbpf spells it ("fentry/F", "fexit/F", "fmod_ret/F",
// "lsm/HOOK" for the BTF function bpf_lsm_HOOK, each with an optional ".s" for sleepable;
// "struct_ops/OPS:MEMBER" or "struct_ops.s/OPS:MEMBER" for the member of an ops table, e.g.
// "struct_ops/tcp_congestion_ops:cong_avoid": in an object libbpf ignores the name after the
// slash and the .struct_ops.link map pointing at the program decides the member; as
// attach_type and target: "struct_ops" and "tcp_congestion_ops:cong_avoid");
// instead of section, attach_type ("fentry", "fexit", "fmod_ret", "lsm") and target (the
// BTF function name, e.g. "bpf_lsm_file_open") may be given; sleepable; license; maps
// (name, type, key_size, value_size, max_entries, read_only: BPF_F_RDONLY_PROG as libbpf
// sets on .rodata; data: the value of key 0, base64, zeros after it; frozen: BPF_MAP_FREEZE
// after data, as libbpf does to .rodata, so a read-only array is constant to the verifier); insns.
//
// Instructions use the kernel verifier log's notation, so log lines can be pasted back (a
// leading "12: (79) " and a trailing "; state" are ignored):
//
//	r0 = 0        w0 = 1        r1 = r2       w1 = w2       r1 = (s8)r2
//	r1 += 8       r1 -= r2      w1 &= 255     r1 s>>= 3     r1 s/= r2   (also *= /= %= |= ^= <<= >>=)
//	r1 = -r1      r1 = be16 r1  r1 = le32 r1  r1 = bswap64 r1
//	r1 = 0x1122334455667788 ll          (ld_imm64; an r = immediate beyond 32 bits also becomes one)
//	r1 = map[counts]    r1 = map[id:1]   r1 = map_value[counts] + 8
//	r2 = *(u64 *)(r1 +8)       r2 = *(s32 *)(r1 +8)   (sign-extending load)
//	*(u32 *)(r10 -4) = r1      *(u64 *)(r10 -8) = 0
//	lock *(u64 *)(r0 +0) += r1 (also &= |= ^=)
//	if r1 > 0x10 goto pc+3     if w1 s< w2 goto label   (== != > >= < <= s> s>= s< s<= &)
//	goto pc-4                  goto label               label:
//	call bpf_map_lookup_elem   call map_lookup_elem     call bpf_ktime_get_ns#5   call 5
//	call pc+3                  call label               (bpf-to-bpf: a subprogram)
//	call bpf_task_acquire      call bpf_task_acquire#1234   (a kfunc: no helper, no label)
//	exit
//	79 12 08 00 00 00 00 00    (raw: 8 bytes as in memory, little-endian fields)
//
// A call naming neither a helper nor a label calls that kfunc (BPF_PSEUDO_KFUNC_CALL): it
// is resolved by name against the profile's BTF when the program is checked, and by name in
// the kernel backend (wire.KfuncRef), so one list serves every kernel; the log's
// "NAME#BTF_ID" form is read the same way, its id ignored.
//
// Jump offsets written as pc+N count raw instructions (a ld_imm64 is two), as in the
// kernel log; labels are resolved to that count. Anything after ";" is a comment.
package verifier
