package verifier

import (
	"math/bits"

	"github.com/trampjit/trampjit/btfmodel"
)

// Operations 7.2 tracks and 6.12 does not (adjust_scalar_min_max_vals of 7.2, as its
// ground truth shows): BPF_NEG, BPF_END of a constant, unsigned BPF_DIV and BPF_MOD by a
// constant. What 7.2 does with a non-constant BPF_END or source is not pinned: such
// results stay unknown (KNOWN_GAPS.md).

// negEnd is the result of BPF_NEG or BPF_END on a scalar, when the profile tracks it.
func (c *checker) negEnd(in *insn, op string, is64 bool, dst scalar) (scalar, bool) {
	if !c.has(btfmodel.CapVerifierNegEndTrack) {
		return scalar{}, false
	}
	if op == "neg" {
		return kernelALU("-=", constScalar(0), dst, !is64, c.env.Kernel), true
	}
	if !dst.isConst() {
		return scalar{}, false
	}
	x, w := dst.val(), uint(in.imm)
	swap := is64 || in.isX() // BPF_ALU64 bswap, or BPF_TO_BE on a little-endian host
	switch {
	case w == 16 && swap:
		x = uint64(bits.ReverseBytes16(uint16(x)))
	case w == 32 && swap:
		x = uint64(bits.ReverseBytes32(uint32(x)))
	case w == 64 && swap:
		x = bits.ReverseBytes64(x)
	case w < 64:
		x &= 1<<w - 1 // BPF_TO_LE truncates
	}
	return constScalar(x), true
}

// divMod is unsigned BPF_DIV or BPF_MOD by a constant, when the profile tracks
// it: the quotient's range is the dividend's divided, the remainder lies below the
// divisor (the dividend itself when already smaller).
func (c *checker) divMod(op string, dst, src scalar, alu32 bool) (scalar, bool) {
	if !c.has(btfmodel.CapVerifierDivModTrack) || (op != "/=" && op != "%=") {
		return scalar{}, false
	}
	lo, hi, d := dst.umin, dst.umax, src.umin
	if alu32 {
		if !src.t.subreg().isConst() {
			return scalar{}, false
		}
		lo, hi, d = uint64(dst.u32min), uint64(dst.u32max), uint64(src.t.subreg().v)
	} else if !src.isConst() {
		return scalar{}, false
	}
	if lo > hi {
		return scalar{}, false
	}
	if d == 0 {
		// BPF semantics for a known zero divisor: x / 0 is 0, x % 0 is x (kernel/bpf/verifier.c
		// adjust_scalar_min_max_vals with the udiv/umod bounds; fuzzfix2.json).
		if op == "/=" {
			return constScalar(0), true
		}
		if alu32 {
			return rangeScalar(lo, hi), true
		}
		return dst, true
	}
	if op == "/=" {
		return rangeScalar(lo/d, hi/d), true
	}
	if hi < d {
		if alu32 {
			r := rangeScalar(lo, hi)
			return r, true
		}
		return dst, true
	}
	return rangeScalar(0, d-1), true
}
