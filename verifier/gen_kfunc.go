package verifier

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// Generator shapes with kfunc calls (kernel/bpf/verifier.c check_kfunc_call,
// check_reference_leak; kernel/bpf/helpers.c and kernel/trace/bpf_trace.c for the kfuncs):
// acquire/release pairs (bpf_task_from_pid, bpf_task_acquire, bpf_cgroup_from_id,
// bpf_cgroup_acquire, bpf_get_task_exe_file, bpf_lookup_system_key / bpf_lookup_user_key and
// their releases), with the NULL check of a KF_RET_NULL result missing, the release missing on
// one branch or given the wrong pointer, a use after release; bpf_rcu_read_lock/unlock
// regions, balanced or not; kfuncs registered for other program types, kernel functions that
// are not kfuncs, and a name the kernel does not have. Kfunc calls carry the function's name
// as their Reference (the kernel backend writes its BTF id, as for ELF objects); only
// functions the profile's BTF has are called, but for the unknown one.

// kfuncCall is a BPF_PSEUDO_KFUNC_CALL of the kernel function name.
func kfuncCall(name string) asm.Instruction {
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall,
		Constant: -1}.WithReference(name)
}

// has says whether the profile's BTF has the function name (cached).
func (g *Generator) has(name string) bool {
	if g.funcs == nil {
		g.funcs = map[string]bool{}
	}
	ok, seen := g.funcs[name]
	if !seen {
		_, err := btfmodel.FuncByName(g.env.BTF, name)
		ok = err == nil
		g.funcs[name] = ok
	}
	return ok
}

// member is the byte offset of a top-level member of struct name, and its load size (8 for
// pointers); 0 and DWord when the profile lacks it.
func (g *Generator) member(name, field string) (int16, asm.Size) {
	var st *btf.Struct
	if err := g.env.BTF.TypeByName(name, &st); err != nil {
		return 0, asm.DWord
	}
	for _, m := range st.Members {
		if m.Name == field && m.BitfieldSize == 0 {
			sz, _ := btf.Sizeof(m.Type)
			size := map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}[sz]
			if size == asm.InvalidSize {
				size = asm.DWord
			}
			return int16(m.Offset / 8), size
		}
	}
	return 0, asm.DWord
}

// genForeignKfuncs are kfuncs registered for other program types (XDP, TC, LSM only, the
// test module's set) and kernel functions that are no kfunc at all.
var genForeignKfuncs = []string{
	"bpf_xdp_metadata_rx_timestamp", "bpf_dynptr_from_skb", "bpf_sock_destroy", "bpf_kfunc_call_test1",
	"bpf_get_fsverity_digest", "bpf_path_d_path", "bpf_get_file_xattr", "bpf_cpumask_create",
	"bpf_dynptr_from_mem", "tcp_v4_connect", "vfs_read", "kfree", "bpf_fentry_test1",
}

// kfuncProgram is the main function's body for the kfunc shapes.
func (s *genState) kfuncProgram(sec string) {
	_, _, sleepable, _ := ParseSection(sec)
	for n := s.pick(2); n > 0; n-- {
		s.step()
	}
	g := s.g
	switch r := s.pick(100); {
	case r < 22 && g.has("bpf_task_from_pid"):
		s.taskFromPid()
	case r < 40 && g.has("bpf_task_acquire"):
		s.taskAcquire()
	case r < 50 && g.has("bpf_cgroup_acquire"):
		s.cgroupPair()
	case r < 68 && g.has("bpf_rcu_read_lock"):
		s.rcuRegion(sleepable)
	case r < 76 && g.has("bpf_get_task_exe_file") && (s.lsm || s.chance(20)): // LSM programs only
		s.add(asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0), kfuncCall("bpf_get_task_exe_file"))
		off, size := g.member("file", "f_flags")
		s.refUse("bpf_put_file", off, size)
	case r < 88 && g.has("bpf_lookup_system_key"):
		if sleepable && s.chance(50) || s.chance(15) {
			s.add(asm.Mov.Imm(asm.R1, []int32{1, 0, -1}[s.pick(3)]), asm.Mov.Imm(asm.R2, 0), kfuncCall("bpf_lookup_user_key"))
		} else {
			s.add(asm.Mov.Imm(asm.R1, []int32{0, 1, -1}[s.pick(3)]), kfuncCall("bpf_lookup_system_key"))
		}
		s.refUse("bpf_key_put", 0, asm.DWord)
	case r < 97:
		var names []string
		for _, n := range genForeignKfuncs {
			if g.has(n) {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			names = append(names, "bpf_no_such_kfunc")
		}
		s.add(asm.Mov.Reg(asm.R1, s.ctxReg()), asm.Mov.Imm(asm.R2, 0), asm.Mov.Imm(asm.R3, 0), kfuncCall(names[s.pick(len(names))]))
		s.invalidateScratch()
		s.kinds[0] = regKind{set: true}
	default:
		// a name no kernel has: libbpf's "not found in kernel or module BTFs"
		s.add(asm.Mov.Imm(asm.R1, 0), kfuncCall("bpf_no_such_kfunc"))
		s.invalidateScratch()
		s.kinds[0] = regKind{set: true}
	}
	for n := s.pick(2); n > 0; n-- {
		s.step()
	}
}

// refUse follows an acquiring kfunc call (its result in R0): the result kept in R7, a NULL
// check (or not), a read of a member at off, and the release, each sometimes missing, wrong,
// doubled or followed by a use.
func (s *genState) refUse(release string, off int16, size asm.Size) {
	s.invalidateScratch()
	s.add(asm.Mov.Reg(asm.R7, asm.R0))
	s.kinds[7] = regKind{set: true}
	s.kinds[0] = regKind{set: true}
	var rest []genItem
	add := func(insns ...asm.Instruction) { rest = append(rest, genItem{insns: insns}) }
	if s.chance(60) {
		add(asm.LoadMem(asm.R0, asm.R7, off, size))
	}
	if s.chance(10) {
		// the release missing on one branch
		add(asm.FnGetPrandomU32.Call())
		rest = append(rest, genItem{insns: asm.Instructions{asm.JGT.Imm(asm.R0, 7, "")}, skip: 1})
	}
	switch r := s.pick(100); {
	case r < 6:
		// never released
	case r < 10:
		add(asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0), kfuncCall(release)) // not a reference
	case r < 13:
		add(asm.Mov.Reg(asm.R1, asm.R7), asm.Add.Imm(asm.R1, 8), kfuncCall(release)) // a moved pointer
	default:
		add(asm.Mov.Reg(asm.R1, asm.R7), kfuncCall(release))
	}
	switch r := s.pick(100); {
	case r < 5:
		add(asm.LoadMem(asm.R0, asm.R7, off, size)) // after the release
	case r < 8:
		add(asm.Mov.Reg(asm.R1, asm.R7), kfuncCall(release)) // twice
	}
	if len(rest) > 0 && s.chance(85) {
		s.items = append(s.items, genItem{insns: asm.Instructions{asm.JEq.Imm(asm.R7, 0, "")}, skip: len(rest)})
	}
	s.items = append(s.items, rest...)
	s.invalidateScratch()
	s.add(asm.Mov.Imm(asm.R7, 0))
	if s.chance(8) {
		s.items = s.items[:len(s.items)-1] // R7 keeps the (released) pointer
	}
	if s.chance(90) {
		s.add(asm.Mov.Imm(asm.R0, 0)) // a void release leaves R0 unreadable
	}
}

// taskFromPid looks a task up by pid (KF_ACQUIRE | KF_RET_NULL).
func (s *genState) taskFromPid() {
	switch s.pick(4) {
	case 0:
		s.add(asm.FnGetCurrentPidTgid.Call(), asm.Mov.Reg(asm.R1, asm.R0), asm.RSh.Imm(asm.R1, 32))
	case 1:
		s.add(asm.FnGetCurrentPidTgid.Call(), asm.Mov.Reg(asm.R1, asm.R0))
	default:
		s.add(asm.Mov.Imm(asm.R1, []int32{1, 0, -1}[s.pick(3)]))
	}
	s.add(kfuncCall("bpf_task_from_pid"))
	off, size := s.g.member("task_struct", "pid")
	s.refUse("bpf_task_release", off, size)
}

// ctxStructArg loads the first pointer-to-struct argument of the target into dst, or
// returns false.
func (s *genState) ctxStructArg(dst asm.Register, want string) bool {
	slot := 0
	for _, p := range s.proto.Params {
		if ptr, ok := btf.UnderlyingType(p.Type).(*btf.Pointer); ok {
			if st, ok := btf.UnderlyingType(ptr.Target).(*btf.Struct); ok && (want == "" || st.Name == want) {
				s.add(asm.LoadMem(dst, s.ctxReg(), int16(8*slot), asm.DWord))
				return true
			}
		}
		sz, _ := btf.Sizeof(p.Type)
		slot += max(1, (sz+7)/8)
	}
	return false
}

// taskAcquire takes a reference on a task from the current task, an argument, a walked
// pointer, NULL or the stack.
func (s *genState) taskAcquire() {
	off, size := s.g.member("task_struct", "pid")
	switch r := s.pick(10); {
	case r < 4:
		s.add(asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0))
	case r < 6:
		if !s.ctxStructArg(asm.R1, "task_struct") && !s.ctxStructArg(asm.R1, "") {
			s.add(asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0))
		}
	case r < 8:
		field := []string{"real_parent", "group_leader", "parent"}[s.pick(3)]
		poff, _ := s.g.member("task_struct", field)
		s.add(asm.FnGetCurrentTaskBtf.Call(), asm.LoadMem(asm.R1, asm.R0, poff, asm.DWord))
	case r < 9:
		s.add(asm.Mov.Imm(asm.R1, 0))
	case s.chance(50):
		s.add(asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R1, asm.R0))
	default:
		s.add(storeImm(asm.R10, -8, 0, asm.DWord), asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -8))
	}
	s.add(kfuncCall("bpf_task_acquire"))
	s.refUse("bpf_task_release", off, size)
}

// cgroupPair takes a cgroup by id or from the current task's css_set.
func (s *genState) cgroupPair() {
	switch r := s.pick(10); {
	case r < 3 && s.g.has("bpf_cgroup_from_id"):
		s.add(asm.FnGetCurrentCgroupId.Call(), asm.Mov.Reg(asm.R1, asm.R0), kfuncCall("bpf_cgroup_from_id"))
	case r < 5 && s.g.has("bpf_cgroup_from_id"):
		s.add(asm.Mov.Imm(asm.R1, 1), kfuncCall("bpf_cgroup_from_id"))
	default:
		coff, _ := s.g.member("task_struct", "cgroups")
		doff, _ := s.g.member("css_set", "dfl_cgrp")
		s.add(asm.FnGetCurrentTaskBtf.Call(), asm.LoadMem(asm.R1, asm.R0, coff, asm.DWord))
		if s.chance(80) {
			s.add(asm.LoadMem(asm.R1, asm.R1, doff, asm.DWord))
		}
		s.add(kfuncCall("bpf_cgroup_acquire"))
	}
	off, size := s.g.member("cgroup", "level")
	s.refUse("bpf_cgroup_release", off, size)
}

// rcuRegion reads the current task's parent inside bpf_rcu_read_lock/unlock, maybe taking
// a reference on it, with the lock or unlock missing, doubled, or a sleepable helper inside.
func (s *genState) rcuRegion(sleepable bool) {
	lock := func() { s.add(kfuncCall("bpf_rcu_read_lock")) }
	unlock := func() { s.add(kfuncCall("bpf_rcu_read_unlock")) }
	if !s.chance(8) {
		lock()
	}
	if s.chance(6) {
		lock()
	}
	poff, _ := s.g.member("task_struct", []string{"real_parent", "real_parent", "group_leader"}[s.pick(3)])
	off, size := s.g.member("task_struct", "pid")
	s.add(asm.FnGetCurrentTaskBtf.Call(), asm.LoadMem(asm.R7, asm.R0, poff, asm.DWord))
	s.invalidateScratch()
	s.kinds[7] = regKind{set: true}
	var body []genItem
	add := func(insns ...asm.Instruction) { body = append(body, genItem{insns: insns}) }
	add(asm.LoadMem(asm.R0, asm.R7, off, size))
	if s.chance(35) {
		add(asm.Mov.Reg(asm.R1, asm.R7), kfuncCall("bpf_task_acquire"), asm.Mov.Reg(asm.R8, asm.R0))
		body = append(body, genItem{insns: asm.Instructions{asm.JEq.Imm(asm.R8, 0, "")}, skip: 1})
		if s.chance(90) {
			add(asm.Mov.Reg(asm.R1, asm.R8), kfuncCall("bpf_task_release"))
		} else {
			add(asm.Mov.Imm(asm.R0, 0))
		}
	}
	if s.chance(12) || sleepable && s.chance(30) {
		add(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, -16), asm.Mov.Imm(asm.R2, 8), asm.Mov.Imm(asm.R3, 0),
			asm.FnCopyFromUser.Call())
	}
	if s.chance(80) {
		s.items = append(s.items, genItem{insns: asm.Instructions{asm.JEq.Imm(asm.R7, 0, "")}, skip: len(body)})
	}
	s.items = append(s.items, body...)
	if !s.chance(10) {
		unlock()
	}
	if s.chance(6) {
		unlock()
	}
	if s.chance(10) {
		s.add(asm.LoadMem(asm.R0, asm.R7, off, size)) // after the region
	}
	s.invalidateScratch()
	s.kinds[0] = regKind{set: true}
	s.kinds[8] = regKind{set: true}
}
