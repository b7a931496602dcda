package jit

import (
	"fmt"
	"strings"
)

// Flags are the BPF_TRAMP_F_* bits (include/linux/bpf.h) that shape a trampoline.
type Flags uint32

const (
	FlagRestoreRegs   Flags = 1 << 0 // BPF_TRAMP_F_RESTORE_REGS
	FlagCallOrig      Flags = 1 << 1 // BPF_TRAMP_F_CALL_ORIG
	FlagSkipFrame     Flags = 1 << 2 // BPF_TRAMP_F_SKIP_FRAME
	FlagIPArg         Flags = 1 << 3 // BPF_TRAMP_F_IP_ARG
	FlagRetFentryRet  Flags = 1 << 4 // BPF_TRAMP_F_RET_FENTRY_RET
	FlagOrigStack     Flags = 1 << 5 // BPF_TRAMP_F_ORIG_STACK
	FlagShareIPModify Flags = 1 << 6 // BPF_TRAMP_F_SHARE_IPMODIFY
	FlagTailCallCtx   Flags = 1 << 7 // BPF_TRAMP_F_TAIL_CALL_CTX (6.6+)
	FlagIndirect      Flags = 1 << 8 // BPF_TRAMP_F_INDIRECT (6.8+)
)

// knownFlags are the bits flagNames names.
const knownFlags Flags = 1<<9 - 1

var flagNames = []string{"RESTORE_REGS", "CALL_ORIG", "SKIP_FRAME", "IP_ARG", "RET_FENTRY_RET",
	"ORIG_STACK", "SHARE_IPMODIFY", "TAIL_CALL_CTX", "INDIRECT"}

func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var s []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	if rest := f >> len(flagNames); rest != 0 {
		s = append(s, fmt.Sprintf("0x%x", uint32(rest<<len(flagNames))))
	}
	return strings.Join(s, "|")
}
