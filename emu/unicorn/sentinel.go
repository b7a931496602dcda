package unicorn

import "fmt"

// SentinelKind selects how a sentinel ends a run.
type SentinelKind int

// Sentinel kinds; see the package doc for what each costs.
const (
	// SentinelHalt is hlt (x86) or wfi (arm64, riscv64): Unicorn leaves its CPU loop
	// by itself, no hook runs at all.
	SentinelHalt SentinelKind = iota
	// SentinelTrap is int3 (x86) or brk #0 (arm64; none on riscv64, where
	// libunicorn 2.1.4 ends the run on ebreak with UC_ERR_INSN_INVALID), caught by the always-on
	// C interrupt hook, which calls uc_emu_stop.
	SentinelTrap
	// SentinelHook writes no instruction: a C code hook on the address stops
	// the run before the instruction there executes. The address must be
	// mapped executable, since Unicorn translates the instruction first.
	// It is the cheapest kind.
	SentinelHook
)

func (k SentinelKind) String() string {
	switch k {
	case SentinelHalt:
		return "halt"
	case SentinelTrap:
		return "trap"
	case SentinelHook:
		return "hook"
	}
	return fmt.Sprintf("SentinelKind(%d)", int(k))
}

// SentinelBytes returns the instruction encoding of a sentinel kind, or nil
// for SentinelHook.
func SentinelBytes(a Arch, k SentinelKind) []byte {
	switch {
	case a == X86_64 && k == SentinelHalt:
		return []byte{0xf4} // hlt
	case a == X86_64 && k == SentinelTrap:
		return []byte{0xcc} // int3
	case a == ARM64 && k == SentinelHalt:
		return []byte{0x7f, 0x20, 0x03, 0xd5} // wfi
	case a == ARM64 && k == SentinelTrap:
		return []byte{0x00, 0x00, 0x20, 0xd4} // brk #0
	case a == RISCV64 && k == SentinelHalt:
		return []byte{0x73, 0x00, 0x50, 0x10} // wfi
	}
	return nil
}

// stopPC is where the pc is reported after a sentinel at addr ends a run:
// after hlt/wfi/int3 (they complete), at brk (it faults).
func stopPC(a Arch, k SentinelKind, addr uint64) uint64 {
	if k == SentinelHook || (a == ARM64 && k == SentinelTrap) {
		return addr
	}
	return addr + uint64(len(SentinelBytes(a, k)))
}
