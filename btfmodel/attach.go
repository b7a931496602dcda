package btfmodel

import (
	"errors"
	"fmt"
	"strings"
)

// AttachType is how a program attaches to a trampoline, as trampjit spells it.
type AttachType string

const (
	Fentry AttachType = "fentry"   // BPF_TRACE_FENTRY
	Fexit  AttachType = "fexit"    // BPF_TRACE_FEXIT
	ModRet AttachType = "fmod_ret" // BPF_MODIFY_RETURN
	LSM    AttachType = "lsm"      // BPF_LSM_MAC
	// Fsession is BPF_TRACE_FSESSION (attach type 58, Linux 7.0): one program run as both
	// the fentry and the fexit of a function, with a per-call session cookie.
	Fsession AttachType = "fsession"
)

// AttachTypes lists the attach types every profile has, in the order trampjit reports them;
// Kernel.AttachTypes adds those of newer kernels.
var AttachTypes = []AttachType{Fentry, Fexit, ModRet, LSM}

// AttachTypes are the attach types profile k has, in report order: fsession from 7.0 on.
func (k Kernel) AttachTypes() []AttachType {
	if k.Has(CapFsession) {
		return append(AttachTypes[:len(AttachTypes):len(AttachTypes)], Fsession)
	}
	return AttachTypes
}

// ParseAttachType checks an attach type given by a user.
func ParseAttachType(s string) (AttachType, error) {
	for _, t := range append(AttachTypes, Fsession) {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown program kind %q (want fentry, fexit, fmod_ret, lsm or fsession)", s)
}

// Stage says where the kernel refuses an attachment.
type Stage string

const (
	// StageLoad is BPF_PROG_LOAD: the verifier's attach checks; Msg is its log line.
	StageLoad Stage = "load"
	// StageAttach is BPF_LINK_CREATE: the arch JIT refuses to build the trampoline, with an
	// errno and no log.
	StageAttach Stage = "attach"
)

// Verdict is the kernel's answer to one attach type on one function.
type Verdict struct {
	Type  AttachType `json:"kind"`
	OK    bool       `json:"ok"`
	Stage Stage      `json:"stage,omitempty"`
	Errno string     `json:"errno,omitempty"` // "EINVAL", "ENOTSUPP", ...
	// Msg is the kernel's log line when KernelMsg is set; otherwise trampjit's description
	// of a refusal the kernel does not explain.
	Msg       string `json:"message,omitempty"`
	KernelMsg bool   `json:"kernel_message,omitempty"`
	// Note qualifies an answer that rests on an assumption (e.g. no error-injection list).
	Note string `json:"note,omitempty"`
}

// AttachEnv is what the attach checks need besides the function model.
type AttachEnv struct {
	Kernel    Kernel
	Arch      Arch
	Sleepable bool
	// ErrorInjection is the kernel's error-injection list (/sys/kernel/debug/error_injection/list),
	// by function name, for kernels built with CONFIG_FUNCTION_ERROR_INJECTION. Nil means a
	// kernel without it, as Debian's cloud kernels are (no error_injection/list in any
	// guest): within_error_injection_list is then false for every function, and 6.1 and
	// 6.12 have no fallback (captures show __x64_sys_getpgid refused for fmod_ret and
	// sleepable fentry); 7.2 accepts the arch's syscall prefix instead (CapSyscallPrefix).
	ErrorInjection map[string]bool
	// BTFID is the function's BTF id, for messages that print it.
	BTFID uint32
	// FuncIP: the program calls bpf_get_func_ip.
	FuncIP bool
	// NoWideReturnRule leaves out the >8 byte return refusal (CapWideReturnDeny): kernel
	// fuzz's generator draws as it did before the rule, so a seed keeps its cases.
	NoWideReturnRule bool
}

// CheckAttach applies the kernel's checks, in the kernel's order, to attaching one program of
// type at to function name, whose model m was distilled with error distillErr. The order is
// bpf_check_attach_target (distill, sleepable, fmod_ret), check_attach_btf_id (LSM, deny
// lists), then the arch JIT at link time.
func CheckAttach(name string, m *FuncModel, distillErr error, at AttachType, env AttachEnv) Verdict {
	v := Verdict{Type: at}
	if at == Fsession && !env.Kernel.Has(CapFsession) {
		// The attach type only exists from 7.0 on; older kernels refuse the load.
		v.Stage, v.Errno = StageLoad, "EINVAL"
		v.Msg = fmt.Sprintf("Linux %s has no BPF_TRACE_FSESSION (attach type 58, added in 7.0)", env.Kernel)
		return v
	}
	if at == Fsession && !LimitsFor(env.Arch, env.Kernel).Fsession {
		// bpf_check_attach_target, before the target is looked at.
		v.Stage, v.Errno, v.Msg, v.KernelMsg = StageLoad, "EOPNOTSUPP", "JIT does not support fsession", true
		return v
	}
	loadErr := func(msg string) Verdict {
		v.Stage, v.Errno, v.Msg, v.KernelMsg = StageLoad, "EINVAL", msg, true
		return v
	}
	if distillErr != nil {
		var de *DistillError
		if errors.As(distillErr, &de) {
			return loadErr(de.Msg)
		}
		v.Stage, v.Errno, v.Msg = StageLoad, "EINVAL", distillErr.Error()
		return v
	}
	if w, ok := wideReturnDeny(name, m, at, env); ok {
		return w
	}
	if env.Sleepable {
		if ok, why := sleepableOK(name, at, env); !ok {
			v = loadErr(fmt.Sprintf("%s is not sleepable", name))
			v.Note = why
			return v
		}
	}
	if at == ModRet {
		ok, note := modifiable(name, env)
		if !ok {
			v = loadErr(fmt.Sprintf("%s() is not modifiable", name))
			v.Note = note
			return v
		}
		v.Note = note
	}
	if at == LSM {
		if !strings.HasPrefix(name, "bpf_lsm_") || lsmNotHooks[name] {
			return loadErr(fmt.Sprintf("attach_btf_id %d points to wrong type name %s", env.BTFID, name))
		}
		if env.Kernel.Has(CapLSMDisabledHooks) && lsmDisabledHooks[name] {
			return loadErr(fmt.Sprintf("attach_btf_id %d points to disabled hook %s", env.BTFID, name))
		}
	} else {
		if inList(btfIDDeny, name) || (env.Kernel.Has(CapBTFIDDenyRCULock) && inList(btfIDDenyRCULock, name)) {
			if env.Kernel.Has(CapBTFIDDenyMsg) {
				return loadErr(fmt.Sprintf("Attaching tracing programs to function '%s' is rejected.", name))
			}
			v.Stage, v.Errno = StageLoad, "EINVAL"
			v.Msg = "btf_id_deny: the kernel refuses tracing programs on " + name + " and logs no message"
			return v
		}
		if (at == Fexit || at == ModRet || at == Fsession) && env.Kernel.Has(CapNoreturnDeny) && inList(noreturnDeny, name) {
			if env.Kernel.Has(CapNoreturnMsgNamed) {
				return loadErr(fmt.Sprintf("Attaching fexit/fsession/fmod_ret to __noreturn function '%s' is rejected.", name))
			}
			return loadErr(noreturnMsg)
		}
	}
	if at == LSM && env.FuncIP {
		// The verifier's helper check, after the attach checks: bpf_lsm_func_proto offers no
		// bpf_get_func_ip (captured on 6.1 and 7.2 x86_64 and 6.12 arm64; found by kernel fuzz).
		// The log's line after the instruction trace, not its first.
		v.Stage, v.Errno, v.Msg, v.KernelMsg = StageLoad, "ENOTSUPP", "func bpf_get_func_ip#173 not supported for program type 29", true
		return v
	}
	if errno, why := archLimit(m, env); errno != "" {
		v.Stage, v.Errno, v.Msg = StageAttach, errno, why
		return v
	}
	v.OK = true
	return v
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// modifiable is the fmod_ret rule of bpf_check_attach_target / check_attach_modify_return:
// an error-injectable function, a security_ hook, or (6.3+) an fmod_ret id set member.
func modifiable(name string, env AttachEnv) (bool, string) {
	if strings.HasPrefix(name, "security_") {
		return true, ""
	}
	if env.Kernel.Has(CapFmodRetIDSet) && fmodRetIDs[name] {
		return true, ""
	}
	return errorInjectable(name, env), ""
}

// errorInjectable is within_error_injection_list with the given list. A kernel built without
// error injection has no list; from 7.2 on its fmod_ret and sleepable checks take a function
// with the arch's syscall prefix in its place (has_arch_syscall_prefix, kernel/bpf/verifier.c).
func errorInjectable(name string, env AttachEnv) bool {
	if env.ErrorInjection != nil {
		return env.ErrorInjection[name]
	}
	p, ok := syscallPrefix[env.Arch]
	return ok && env.Kernel.Has(CapSyscallPrefix) && strings.HasPrefix(name, p)
}

// syscallPrefix is what has_arch_syscall_prefix compares: the prefix of the arch's syscall
// wrappers, and so of any function starting with it.
var syscallPrefix = map[Arch]string{AMD64: "__x64_", ARM64: "__arm64_", RISCV64: "__riscv_"}

// sleepableOK is the TRACING/LSM part of check_attach_sleepable (can_be_sleepable passed).
func sleepableOK(name string, at AttachType, env AttachEnv) (bool, string) {
	if at == LSM {
		return sleepableLSMHooks[name], ""
	}
	if env.Kernel.Has(CapFmodRetIDSet) && fmodRetSleepable[name] {
		return true, ""
	}
	if nonSleepableErrorInject[name] {
		return false, ""
	}
	return errorInjectable(name, env), ""
}

// archLimit is the arch JIT's refusal at link time (-ENOTSUPP, errno 524, no log).
func archLimit(m *FuncModel, env AttachEnv) (errno, why string) {
	l := LimitsFor(env.Arch, env.Kernel)
	if l.Trampolines && !l.KernelFuncTargets {
		// register_fentry: the function is an ftrace site but there are no direct calls.
		return "ENOTSUPP", fmt.Sprintf("%s %s cannot attach trampolines to kernel functions (no ftrace direct calls); only BPF-program targets", env.Arch, env.Kernel)
	}
	return progLimit(m, env)
}

// CheckBPFProgTarget is archLimit for a BPF-program target, which every profile whose arch has
// trampolines can trace.
func CheckBPFProgTarget(m *FuncModel, env AttachEnv) (errno, why string) {
	return progLimit(m, env)
}

// progLimit is the arch JIT's argument limits (arch_prepare_bpf_trampoline).
func progLimit(m *FuncModel, env AttachEnv) (errno, why string) {
	l := LimitsFor(env.Arch, env.Kernel)
	nargs, nregs := m.NrArgs(), m.NrRegs()
	switch {
	case !l.Trampolines:
		// The weak arch_prepare_bpf_trampoline (kernel/bpf/trampoline.c).
		return "ENOTSUPP", fmt.Sprintf("Linux %s has no %s BPF trampoline (arch_prepare_bpf_trampoline is the weak default); nothing can attach", env.Kernel, env.Arch)
	case env.Arch == AMD64 && !l.StackArgs:
		// arch/x86/net/bpf_jit_comp.c arch_prepare_bpf_trampoline (6.1): argument registers only.
		if nargs > l.MaxRegSlots || nregs > l.MaxRegSlots {
			return "ENOTSUPP", fmt.Sprintf("the %s x86_64 trampoline takes at most %d argument registers; %s needs %d", env.Kernel, l.MaxRegSlots, m.Name, nregs)
		}
	case env.Arch == AMD64:
		// Stack arguments are copied, up to MAX_BPF_FUNC_ARGS slots.
		if nregs > l.MaxRegSlots {
			return "ENOTSUPP", fmt.Sprintf("the x86_64 trampoline takes at most %d argument slots; %s needs %d", l.MaxRegSlots, m.Name, nregs)
		}
	case env.Arch == ARM64 && !l.StructArgs:
		// arch/arm64/net/bpf_jit_comp.c (6.1): any STRUCT_ARG is refused, arguments are registers.
		if m.HasStructArg() {
			return "ENOTSUPP", fmt.Sprintf("the %s arm64 trampoline refuses struct arguments", env.Kernel)
		}
		if nargs > l.MaxRegSlots {
			return "ENOTSUPP", fmt.Sprintf("the %s arm64 trampoline takes at most %d arguments; %s has %d", env.Kernel, l.MaxRegSlots, m.Name, nargs)
		}
	case env.Arch == ARM64:
		// btf_func_model_nregs (6.12): registers x0-x7 only.
		if nregs > l.MaxRegSlots {
			return "ENOTSUPP", fmt.Sprintf("the %s arm64 trampoline takes at most %d argument registers; %s needs %d", env.Kernel, l.MaxRegSlots, m.Name, nregs)
		}
	case env.Arch == RISCV64 && !l.StackArgs:
		// __arch_prepare_bpf_trampoline before 6.11: "8 arguments passed by registers",
		// a struct argument counted by its slots.
		if nregs > l.MaxRegSlots {
			return "ENOTSUPP", fmt.Sprintf("the %s riscv64 trampoline takes at most %d argument registers (a0-a7); %s needs %d", env.Kernel, l.MaxRegSlots, m.Name, nregs)
		}
	case env.Arch == RISCV64:
		// __arch_prepare_bpf_trampoline: m->nr_args > MAX_BPF_FUNC_ARGS, slots are not
		// counted (btf_distill_func_proto refuses such a function first).
		if nargs > l.MaxArgs {
			return "ENOTSUPP", fmt.Sprintf("the riscv64 trampoline takes at most %d arguments; %s has %d", l.MaxArgs, m.Name, nargs)
		}
	}
	return "", ""
}
