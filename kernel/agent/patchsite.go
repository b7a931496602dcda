package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// siteKind says how a patched function enters its trampoline.
type siteKind string

const (
	siteCall siteKind = "call" // x86 e8 rel32, arm64 bl: the trampoline sees a return address
	siteJmp  siteKind = "jmp"  // x86 e9 rel32 (7.x "jmp mode" for fexit/fmod_ret)
)

// x86Landing are the 4-byte instructions a patch site may follow: ENDBR64 as IBT builds it,
// and the poison a CPU without IBT seals it to (6.12: nopw (%rax); 7.x: nopl -42(%rax),
// whose last byte is the UDB opcode).
var x86Landing = [][]byte{
	{0xf3, 0x0f, 0x1e, 0xfa},
	{0x66, 0x0f, 0x1f, 0x00},
	{0x0f, 0x1f, 0x40, 0xd6},
}

// x86Nop5 is the fentry site when nothing is attached.
var x86Nop5 = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}

// patchSite decodes where the traced function enters its trampoline and what it enters.
// x86_64: a call or jmp rel32 at the entry, after a landing pad when the build has one; the
// opcode is decoded at the instruction boundary (a rel32 may itself contain e8 or e9).
// arm64: a bl among the first instructions (after bti c and "mov x9, x30"). riscv64: auipc;
// jalr with t0 as the link (riscv64.go).
func patchSite(arch string, site []byte, fn uint64) (ip, target uint64, kind siteKind, err error) {
	switch arch {
	case "amd64":
		off := 0
		for _, l := range x86Landing {
			if bytes.HasPrefix(site, l) {
				off = len(l)
				break
			}
		}
		in := site[off:]
		ip = fn + uint64(off)
		switch {
		case len(in) >= 5 && (in[0] == 0xe8 || in[0] == 0xe9):
			kind = siteCall
			if in[0] == 0xe9 {
				kind = siteJmp
			}
			rel := int32(binary.LittleEndian.Uint32(in[1:]))
			return ip, ip + 5 + uint64(int64(rel)), kind, nil
		case bytes.HasPrefix(in, x86Nop5):
			return ip, 0, "", fmt.Errorf("the patch site %#x holds the fentry NOP: nothing is attached (bytes % x)", ip, site[:min(len(site), off+5)])
		}
		return ip, 0, "", fmt.Errorf("no call or jmp rel32 at %#x (bytes % x)", ip, site[:min(len(site), off+5)])
	case "arm64":
		for i := 0; i+4 <= len(site) && i < 16; i += 4 {
			w := binary.LittleEndian.Uint32(site[i:])
			if w&0xfc000000 == 0x94000000 { // bl imm26
				imm := int64(int32(w<<6) >> 6) // sign-extend 26 bits
				ip = fn + uint64(i)
				return ip, ip + uint64(imm*4), siteCall, nil
			}
		}
		return 0, 0, "", fmt.Errorf("no bl in the first instructions at %#x (bytes % x)", fn, site[:min(len(site), 16)])
	case "riscv64":
		return rvPatchSite(site, fn)
	}
	return 0, 0, "", fmt.Errorf("unsupported architecture %s", arch)
}
