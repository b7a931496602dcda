package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/trampjit/trampjit/kernel/wire"
)

// collectInfo reads the facts recorded with every capture: CPU vulnerability state (return
// thunks and call-depth accounting depend on it), BTF size and the error-injection list
// (which decides where fmod_ret may attach).
func collectInfo(h wire.Hello) wire.Info {
	in := wire.Info{Hello: h, Vulnerabilities: map[string]string{}, Errors: map[string]string{}}
	if b, err := os.ReadFile("/proc/cmdline"); err == nil {
		in.Cmdline = strings.TrimSpace(string(b))
	}
	vd := "/sys/devices/system/cpu/vulnerabilities"
	ents, err := os.ReadDir(vd)
	if err != nil {
		in.Errors["vulnerabilities"] = err.Error()
	}
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(vd, e.Name())); err == nil {
			in.Vulnerabilities[e.Name()] = strings.TrimSpace(string(b))
		}
	}
	if st, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil {
		in.BTFSize = st.Size()
	} else {
		in.Errors["btf"] = err.Error()
	}
	if b, err := os.ReadFile("/sys/kernel/debug/error_injection/list"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				in.ErrorInjection = append(in.ErrorInjection, l)
			}
		}
	} else {
		in.Errors["error_injection"] = err.Error()
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			k = strings.TrimSpace(k)
			if ok && (k == "flags" || k == "Features") {
				in.CPUFlags = strings.Fields(v)
				break
			}
			// riscv64: "isa : rv64imafdc_zicntr_..._zbb": the base and each extension
			// (arch/riscv/kernel/cpu.c); Zbb decides the JIT's sign extensions.
			if ok && k == "isa" {
				in.CPUFlags = strings.Split(strings.TrimSpace(v), "_")
				break
			}
		}
	}
	if len(in.Errors) == 0 {
		in.Errors = nil
	}
	return in
}
