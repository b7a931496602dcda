package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// kprobeList is where the kernel lists registered kprobes with their state.
const kprobeList = "/sys/kernel/debug/kprobes/list"

// probeState returns the kprobes/list line of fn's first probe, without its address:
// "k  bpf_modify_return_test+0x9    [OPTIMIZED]"; "" when there is none.
func probeState(fn string) string {
	b, err := os.ReadFile(kprobeList)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasPrefix(f[2], fn+"+") {
			return strings.Join(f[1:], " ")
		}
	}
	return ""
}

// A kprobe on a function's first instruction is, where the kernel has KPROBES_ON_FTRACE
// (x86_64), an ftrace callback: no trap. kprobe_trap puts the kprobe on the instruction
// after the ftrace patch site instead, where the kernel plants a breakpoint (int3, brk):
// the trap, then a single step or an emulation of the displaced instruction. Optimised
// kprobes (a jump instead of int3, x86_64) are switched off for it; kprobe_opt is the same
// probe with them on (OPTPROBES: the optimiser replaces the int3 with a jump to a detour
// buffer after a few jiffies, which the settling before a measurement waits out).

// optSysctl is debug.kprobes-optimization (CONFIG_OPTPROBES).
const optSysctl = "/proc/sys/debug/kprobes-optimization"

// setOptprobes writes the sysctl; a kernel without it (arm64) has none to switch.
func setOptprobes(on bool) {
	v := "0\n"
	if on {
		v = "1\n"
	}
	if err := os.WriteFile(optSysctl, []byte(v), 0); err != nil && !os.IsNotExist(err) {
		logf("%s: %v", optSysctl, err)
	}
}

// arm64MovX9X30 is "mov x9, x30", which precedes an arm64 ftrace patch site.
const arm64MovX9X30 = 0xaa1e03e9

// trapOffset is the offset of the instruction after fn's ftrace patch site.
func trapOffset(fn string) (uint64, error) {
	ks, err := readKallsyms()
	if err != nil {
		return 0, err
	}
	a, err := ks.addr(fn)
	if err != nil {
		return 0, err
	}
	m, err := newMemReader()
	if err != nil {
		return 0, err
	}
	defer m.Close()
	b, err := m.read(a, 32)
	if err != nil {
		return 0, err
	}
	switch runtime.GOARCH {
	case "amd64":
		off := 0
		for _, l := range x86Landing {
			if bytes.HasPrefix(b, l) {
				off = len(l)
			}
		}
		if !bytes.HasPrefix(b[off:], x86Nop5) {
			return 0, fmt.Errorf("%s: no fentry NOP at +%d (bytes % x)", fn, off, b[:off+5])
		}
		return uint64(off + 5), nil
	case "arm64":
		for i := 0; i+8 <= len(b); i += 4 {
			if binary.LittleEndian.Uint32(b[i:]) == arm64MovX9X30 {
				return uint64(i + 8), nil
			}
		}
		return 0, fmt.Errorf("%s: no mov x9, x30 before a patch site (bytes % x)", fn, b)
	}
	return 0, fmt.Errorf("no kprobe_trap on %s", runtime.GOARCH)
}
