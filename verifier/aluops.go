package verifier

import (
	"math"
	"math/bits"

	"github.com/trampjit/trampjit/btfmodel"
)

// kernelALU is adjust_scalar_min_max_vals for two scalars: which operations are tracked
// (6.1: only +, -, & with a non-constant source; 6.12: also |, ^, *, by
// is_safe_to_compute_dst_reg_range), then scalar{32,}_min_max_<op>, the zero extension
// of 32-bit operations and reg_bounds_sync. Division, modulo and the signed variants are
// never tracked: their result is unknown even for constants.
func kernelALU(op string, dst, src scalar, alu32 bool, k btfmodel.Kernel) scalar {
	anySrc, cross := k.Has(btfmodel.CapVerifierALURangeAnySrc), k.Has(btfmodel.CapVerifierBoundsCross)
	needSign := k.Has(btfmodel.CapVerifierTnumSignedNeedSign)
	srcConst := src.t.isConst() && src.smin == src.smax && src.umin == src.umax
	if alu32 {
		srcConst = src.t.subreg().isConst() && src.s32min == src.s32max && src.u32min == src.u32max
	}
	width := uint64(64)
	if alu32 {
		width = 32
	}
	safe := false
	switch op {
	case "+=", "-=", "&=":
		safe = true
	case "|=", "^=", "*=":
		safe = srcConst || anySrc
	case "<<=", ">>=", "s>>=":
		safe = srcConst && src.umax < width
		if alu32 {
			safe = srcConst && uint64(src.u32max) < width
		}
	}
	if !anySrc {
		// 6.1: a source with a constant tnum but other bounds (dead branches) or inverted
		// bounds taints the result; an unknown source is tracked for +, -, & only. Past
		// those checks an untracked operation (div, mod, an oversized shift) still gets
		// the 32-bit zero extension; 6.12 returns before it.
		tc := src.t.isConst()
		bad := (tc && !srcConst) || src.smin > src.smax || src.umin > src.umax
		if alu32 {
			tc = src.t.subreg().isConst()
			bad = (tc && !srcConst) || src.s32min > src.s32max || src.u32min > src.u32max
		}
		if bad || (!tc && op != "+=" && op != "-=" && op != "&=") {
			return unknownScalar()
		}
		if !safe {
			d := unknownScalar()
			if alu32 {
				d.zext()
			}
			d.syncWith(!cross, needSign)
			return d
		}
	}
	if !safe {
		return unknownScalar()
	}
	d := dst
	switch op {
	case "+=":
		add32(&d, &src)
		add64(&d, &src)
		d.t = d.t.add(src.t)
	case "-=":
		sub32(&d, &src)
		sub64(&d, &src)
		d.t = d.t.sub(src.t)
	case "*=":
		d.t = d.t.mul(src.t)
		mul32(&d, &src)
		mul64(&d, &src)
	case "&=":
		d.t = d.t.and(src.t)
		bitop32(&d, &src, op)
		bitop64(&d, &src, op, needSign)
	case "|=":
		d.t = d.t.or(src.t)
		bitop32(&d, &src, op)
		bitop64(&d, &src, op, needSign)
	case "^=":
		d.t = d.t.xor(src.t)
		bitop32(&d, &src, op)
		bitop64(&d, &src, op, needSign)
	case "<<=":
		if alu32 {
			sub := d.t.subreg()
			lsh32(&d, uint64(src.u32min), uint64(src.u32max))
			d.t = sub.lsh(uint(src.u32min)).subreg()
			d.unbound64()
			d.updateBoundsWith(needSign)
		} else {
			lsh64(&d, src.umin, src.umax)
			lsh32(&d, src.umin, src.umax)
			d.t = d.t.lsh(uint(src.umin))
			d.updateBoundsWith(needSign)
		}
	case ">>=":
		if alu32 {
			sub := d.t.subreg()
			d.s32min, d.s32max = math.MinInt32, math.MaxInt32
			d.t = sub.rsh(uint(src.u32min))
			d.u32min >>= src.u32max
			d.u32max >>= src.u32min
			d.unbound64()
			d.updateBoundsWith(needSign)
		} else {
			d.smin, d.smax = math.MinInt64, math.MaxInt64
			d.t = d.t.rsh(uint(src.umin))
			d.umin >>= src.umax
			d.umax >>= src.umin
			d.unbound32()
			d.updateBoundsWith(needSign)
		}
	case "s>>=":
		if alu32 {
			sh := uint(src.u32min)
			d.s32min, d.s32max = d.s32min>>sh, d.s32max>>sh
			d.t = d.t.subreg().arsh(sh, 32)
			d.u32min, d.u32max = 0, math.MaxUint32
			d.unbound64()
			d.updateBoundsWith(needSign)
		} else {
			sh := uint(src.umin)
			d.smin, d.smax = d.smin>>sh, d.smax>>sh
			d.t = d.t.arsh(sh, 64)
			d.umin, d.umax = 0, math.MaxUint64
			d.unbound32()
			d.updateBoundsWith(needSign)
		}
	}
	if alu32 {
		d.zext()
	}
	d.syncWith(!cross, needSign)
	return d
}

func add32(d, s *scalar) {
	a, o1 := addS32(d.s32min, s.s32min)
	b, o2 := addS32(d.s32max, s.s32max)
	if o1 || o2 {
		d.s32min, d.s32max = math.MinInt32, math.MaxInt32
	} else {
		d.s32min, d.s32max = a, b
	}
	u1, c1 := bits.Add32(d.u32min, s.u32min, 0)
	u2, c2 := bits.Add32(d.u32max, s.u32max, 0)
	if c1 != 0 || c2 != 0 {
		d.u32min, d.u32max = 0, math.MaxUint32
	} else {
		d.u32min, d.u32max = u1, u2
	}
}

func add64(d, s *scalar) {
	if addOverflows(d.smin, s.smin) || addOverflows(d.smax, s.smax) {
		d.smin, d.smax = math.MinInt64, math.MaxInt64
	} else {
		d.smin, d.smax = d.smin+s.smin, d.smax+s.smax
	}
	u1, c1 := bits.Add64(d.umin, s.umin, 0)
	u2, c2 := bits.Add64(d.umax, s.umax, 0)
	if c1 != 0 || c2 != 0 {
		d.umin, d.umax = 0, math.MaxUint64
	} else {
		d.umin, d.umax = u1, u2
	}
}

func sub32(d, s *scalar) {
	a, o1 := subS32(d.s32min, s.s32max)
	b, o2 := subS32(d.s32max, s.s32min)
	if o1 || o2 {
		d.s32min, d.s32max = math.MinInt32, math.MaxInt32
	} else {
		d.s32min, d.s32max = a, b
	}
	if d.u32min < s.u32max {
		d.u32min, d.u32max = 0, math.MaxUint32
	} else {
		d.u32min, d.u32max = d.u32min-s.u32max, d.u32max-s.u32min
	}
}

func sub64(d, s *scalar) {
	if subOverflows(d.smin, s.smax) || subOverflows(d.smax, s.smin) {
		d.smin, d.smax = math.MinInt64, math.MaxInt64
	} else {
		d.smin, d.smax = d.smin-s.smax, d.smax-s.smin
	}
	if d.umin < s.umax {
		d.umin, d.umax = 0, math.MaxUint64
	} else {
		d.umin, d.umax = d.umin-s.umax, d.umax-s.umin
	}
}

func addS32(a, b int32) (int32, bool) {
	c := int64(a) + int64(b)
	return int32(c), c < math.MinInt32 || c > math.MaxInt32
}

func subS32(a, b int32) (int32, bool) {
	c := int64(a) - int64(b)
	return int32(c), c < math.MinInt32 || c > math.MaxInt32
}

func mul32(d, s *scalar) {
	if s.s32min < 0 || d.s32min < 0 || s.u32max > math.MaxUint16 || d.u32max > math.MaxUint16 {
		d.unbound32()
		return
	}
	d.u32min *= s.u32min
	d.u32max *= s.u32max
	if d.u32max > math.MaxInt32 {
		d.s32min, d.s32max = math.MinInt32, math.MaxInt32
	} else {
		d.s32min, d.s32max = int32(d.u32min), int32(d.u32max)
	}
}

func mul64(d, s *scalar) {
	if s.smin < 0 || d.smin < 0 || s.umax > math.MaxUint32 || d.umax > math.MaxUint32 {
		d.unbound64()
		return
	}
	d.umin *= s.umin
	d.umax *= s.umax
	if d.umax > math.MaxInt64 {
		d.smin, d.smax = math.MinInt64, math.MaxInt64
	} else {
		d.smin, d.smax = int64(d.umin), int64(d.umax)
	}
}

// bitop32 is scalar32_min_max_and/or/xor (d.t already combined).
func bitop32(d, s *scalar, op string) {
	t := d.t.subreg()
	if s.t.subreg().isConst() && t.isConst() {
		v := uint32(t.v)
		d.s32min, d.s32max, d.u32min, d.u32max = int32(v), int32(v), v, v
		return
	}
	neg := d.s32min < 0 || s.s32min < 0
	switch op {
	case "&=":
		d.u32min = uint32(t.v)
		d.u32max = min(d.u32max, s.u32max)
	case "|=":
		d.u32min = max(d.u32min, s.u32min)
		d.u32max = uint32(t.v | t.m)
	case "^=":
		d.u32min, d.u32max = uint32(t.v), uint32(t.v|t.m)
	}
	if neg {
		d.s32min, d.s32max = math.MinInt32, math.MaxInt32
	} else {
		d.s32min, d.s32max = int32(d.u32min), int32(d.u32max)
	}
}

func bitop64(d, s *scalar, op string, needSign bool) {
	if s.t.isConst() && d.t.isConst() {
		*d = markKnown(d.t.v)
		return
	}
	neg := d.smin < 0 || s.smin < 0
	switch op {
	case "&=":
		d.umin = d.t.v
		d.umax = min(d.umax, s.umax)
	case "|=":
		d.umin = max(d.umin, s.umin)
		d.umax = d.t.v | d.t.m
	case "^=":
		d.umin, d.umax = d.t.v, d.t.v|d.t.m
	}
	if neg {
		d.smin, d.smax = math.MinInt64, math.MaxInt64
	} else {
		d.smin, d.smax = int64(d.umin), int64(d.umax)
	}
	d.updateBoundsWith(needSign)
}

// lsh32 is __scalar32_min_max_lsh.
func lsh32(d *scalar, umin, umax uint64) {
	d.s32min, d.s32max = math.MinInt32, math.MaxInt32
	if umax > 31 || uint64(d.u32max) > 1<<(31-umax) {
		d.u32min, d.u32max = 0, math.MaxUint32
	} else {
		d.u32min <<= umin
		d.u32max <<= umax
	}
}

// lsh64 is __scalar64_min_max_lsh (before the 32-bit part: it reads the old s32 bounds).
func lsh64(d *scalar, umin, umax uint64) {
	if umin == 32 && umax == 32 && d.s32max >= 0 {
		d.smax = int64(d.s32max) << 32
	} else {
		d.smax = math.MaxInt64
	}
	if umin == 32 && umax == 32 && d.s32min >= 0 {
		d.smin = int64(d.s32min) << 32
	} else {
		d.smin = math.MinInt64
	}
	if d.umax > 1<<(63-umax) {
		d.umin, d.umax = 0, math.MaxUint64
	} else {
		d.umin <<= umin
		d.umax <<= umax
	}
}
