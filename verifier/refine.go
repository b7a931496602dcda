package verifier

import "github.com/trampjit/trampjit/btfmodel"

// Branch refinement as the kernels do it: 6.12's reg_set_min_max (regs_refine_cond_op on
// both registers, then reg_bounds_sync) and 6.1's reg_set_min_max / _inv /
// reg_combine_min_max (a constant on one side, or equality of two registers).

// flipOp swaps the operands of a comparison (flip_opcode).
var flipOp = map[string]string{"==": "==", "!=": "!=", "&": "&", "!&": "!&", ">": "<", ">=": "<=", "<": ">", "<=": ">=",
	"s>": "s<", "s>=": "s<=", "s<": "s>", "s<=": "s>="}

// refineEdge gives dst and src on one edge (taken or fall-through) of `if dst op src`.
func (c *checker) refineEdge(d, s scalar, op string, taken, is32, srcImm, same bool) (scalar, scalar) {
	if !taken {
		op = negate[op]
	}
	if !c.has(btfmodel.CapVerifierRangeVsRange) {
		return refine61(d, s, op, is32, srcImm)
	}
	needSign := c.has(btfmodel.CapVerifierTnumSignedNeedSign)
	if same { // `if r0 s> r0`: both sides are one register, refined twice
		refineCond(&d, &d, op, is32)
		d.syncWith(false, needSign)
		return d, d
	}
	refineCond(&d, &s, op, is32)
	d.syncWith(false, needSign)
	s.syncWith(false, needSign)
	return d, s
}

// sanity is 6.12's reg_bounds_sanity_check after a refinement: impossible bounds are
// reported and forgotten (the tnum stays).
func (c *checker) sanity(s *scalar, what string) {
	msg := ""
	switch {
	case s.invalid():
		msg = "range bounds violation"
	case s.t.isConst() && (s.umin != s.t.v || s.umax != s.t.v || s.smin != int64(s.t.v) || s.smax != int64(s.t.v)):
		msg = "const tnum out of sync with range bounds"
	case s.t.subreg().isConst() && (s.u32min != uint32(s.t.v) || s.u32max != uint32(s.t.v) ||
		s.s32min != int32(uint32(s.t.v)) || s.s32max != int32(uint32(s.t.v))):
		msg = "const subreg tnum out of sync with range bounds"
	default:
		return
	}
	c.logf("REG INVARIANTS VIOLATION (%s): %s u64=[%#x, %#x] s64=[%#x, %#x] u32=[%#x, %#x] s32=[%#x, %#x] var_off=(%#x, %#x)",
		what, msg, s.umin, s.umax, uint64(s.smin), uint64(s.smax), s.u32min, s.u32max,
		uint32(s.s32min), uint32(s.s32max), s.t.v, s.t.m)
	s.unbound64()
	s.unbound32()
}

func (s *scalar) invalid() bool {
	return s.umin > s.umax || s.smin > s.smax || s.u32min > s.u32max || s.s32min > s.s32max
}

func regConst(s *scalar, is32 bool) (uint64, bool) {
	if is32 {
		t := s.t.subreg()
		return t.v, t.isConst()
	}
	return s.t.v, s.t.isConst()
}

// withSubreg is tnum_with_subreg.
func withSubreg(t, sub tnum) tnum { return t.rsh(32).lsh(32).or(sub.subreg()) }

// refineCond is 6.12's regs_refine_cond_op ("!&" is BPF_JSET|BPF_X, the negated JSET).
func refineCond(r1, r2 *scalar, op string, is32 bool) {
	switch op {
	case ">=", ">", "s>=", "s>":
		op = flipOp[op]
		r1, r2 = r2, r1
	}
	switch op {
	case "==":
		if is32 {
			r1.u32min, r1.u32max = max(r1.u32min, r2.u32min), min(r1.u32max, r2.u32max)
			r1.s32min, r1.s32max = max(r1.s32min, r2.s32min), min(r1.s32max, r2.s32max)
			r2.u32min, r2.u32max, r2.s32min, r2.s32max = r1.u32min, r1.u32max, r1.s32min, r1.s32max
			t := r1.t.subreg().intersect(r2.t.subreg())
			r1.t, r2.t = withSubreg(r1.t, t), withSubreg(r2.t, t)
		} else {
			r1.umin, r1.umax = max(r1.umin, r2.umin), min(r1.umax, r2.umax)
			r1.smin, r1.smax = max(r1.smin, r2.smin), min(r1.smax, r2.smax)
			r2.umin, r2.umax, r2.smin, r2.smax = r1.umin, r1.umax, r1.smin, r1.smax
			r1.t = r1.t.intersect(r2.t)
			r2.t = r1.t
		}
	case "!=", "&", "!&":
		if _, ok := regConst(r2, is32); !ok {
			r1, r2 = r2, r1
		}
		val, ok := regConst(r2, is32)
		if !ok {
			return
		}
		switch op {
		case "!=":
			if is32 {
				if r1.u32min == uint32(val) {
					r1.u32min++
				}
				if r1.u32max == uint32(val) {
					r1.u32max--
				}
				if r1.s32min == int32(val) {
					r1.s32min++
				}
				if r1.s32max == int32(val) {
					r1.s32max--
				}
			} else {
				if r1.umin == val {
					r1.umin++
				}
				if r1.umax == val {
					r1.umax--
				}
				if r1.smin == int64(val) {
					r1.smin++
				}
				if r1.smax == int64(val) {
					r1.smax--
				}
			}
		case "&":
			if val == 0 || val&(val-1) != 0 {
				return // only a single bit teaches something
			}
			if is32 {
				r1.t = withSubreg(r1.t, r1.t.subreg().or(tconst(val)))
			} else {
				r1.t = r1.t.or(tconst(val))
			}
			forgetRanges(r1)
		case "!&":
			if is32 {
				r1.t = withSubreg(r1.t, r1.t.subreg().and(tconst(^val)))
			} else {
				r1.t = r1.t.and(tconst(^val))
			}
			forgetRanges(r1)
		}
	case "<=":
		if is32 {
			r1.u32max = min(r1.u32max, r2.u32max)
			r2.u32min = max(r1.u32min, r2.u32min)
		} else {
			r1.umax = min(r1.umax, r2.umax)
			r2.umin = max(r1.umin, r2.umin)
		}
	case "<":
		if is32 {
			r1.u32max = min(r1.u32max, r2.u32max-1)
			r2.u32min = max(r1.u32min+1, r2.u32min)
		} else {
			r1.umax = min(r1.umax, r2.umax-1)
			r2.umin = max(r1.umin+1, r2.umin)
		}
	case "s<=":
		if is32 {
			r1.s32max = min(r1.s32max, r2.s32max)
			r2.s32min = max(r1.s32min, r2.s32min)
		} else {
			r1.smax = min(r1.smax, r2.smax)
			r2.smin = max(r1.smin, r2.smin)
		}
	case "s<":
		if is32 {
			r1.s32max = min(r1.s32max, r2.s32max-1)
			r2.s32min = max(r1.s32min+1, r2.s32min)
		} else {
			r1.smax = min(r1.smax, r2.smax-1)
			r2.smin = max(r1.smin+1, r2.smin)
		}
	}
}

// forgetRanges drops the bounds after a JSET refined the tnum, keeping only what the tnum
// says (the 2025 fix for range invariant violations; Debian's 6.12.117 prints the result).
func forgetRanges(s *scalar) {
	s.unbound64()
	s.unbound32()
}

// refine61 is 6.1's refinement: against a constant (either side), or two registers
// compared for equality (64-bit only). src is refined only in the register forms.
func refine61(d, s scalar, op string, is32, srcImm bool) (scalar, scalar) {
	if v, ok := regConst(&s, is32); ok || srcImm {
		if srcImm {
			v = s.t.v
		}
		setMinMax61(&d, v, op, is32)
		return d, s
	}
	if v, ok := regConst(&d, is32); ok {
		setMinMax61(&s, v, flipOp[op], is32)
		return d, s
	}
	if !is32 && op == "==" {
		d.umin, d.umax = max(d.umin, s.umin), min(d.umax, s.umax)
		d.smin, d.smax = max(d.smin, s.smin), min(d.smax, s.smax)
		d.t = d.t.intersect(s.t)
		d.kernelSync(true)
		return d, d
	}
	return d, s
}

// setMinMax61 is one edge of 6.1's reg_set_min_max: r compared with the constant val.
func setMinMax61(r *scalar, val uint64, op string, is32 bool) {
	val32 := uint32(val)
	t64, t32 := r.t, r.t.subreg()
	switch op {
	case "==":
		if is32 {
			r.t = withSubreg(r.t, tconst(uint64(val32)))
			r.s32min, r.s32max, r.u32min, r.u32max = int32(val32), int32(val32), val32, val32
			t32 = r.t.subreg()
		} else {
			*r = constScalar(val)
			t64 = r.t
		}
	case "!=":
		// nothing learnt, but a 32-bit comparison still forgets the 64-bit bounds below
	case "&":
		if is32 && val32 != 0 && val32&(val32-1) == 0 {
			t32 = t32.or(tconst(uint64(val32)))
		} else if !is32 && val != 0 && val&(val-1) == 0 {
			t64 = t64.or(tconst(val))
		}
	case "!&":
		if is32 {
			t32 = t32.and(tconst(uint64(^val32)))
		} else {
			t64 = t64.and(tconst(^val))
		}
	case ">", ">=":
		if is32 {
			lo := val32
			if op == ">" {
				lo++
			}
			r.u32min = max(r.u32min, lo)
		} else {
			lo := val
			if op == ">" {
				lo++
			}
			r.umin = max(r.umin, lo)
		}
	case "<", "<=":
		if is32 {
			hi := val32
			if op == "<" {
				hi--
			}
			r.u32max = min(r.u32max, hi)
		} else {
			hi := val
			if op == "<" {
				hi--
			}
			r.umax = min(r.umax, hi)
		}
	case "s>", "s>=":
		if is32 {
			lo := int32(val32)
			if op == "s>" {
				lo++
			}
			r.s32min = max(r.s32min, lo)
		} else {
			lo := int64(val)
			if op == "s>" {
				lo++
			}
			r.smin = max(r.smin, lo)
		}
	case "s<", "s<=":
		if is32 {
			hi := int32(val32)
			if op == "s<" {
				hi--
			}
			r.s32max = min(r.s32max, hi)
		} else {
			hi := int64(val)
			if op == "s<" {
				hi--
			}
			r.smax = min(r.smax, hi)
		}
	}
	if is32 {
		r.t = t64.rsh(32).lsh(32).or(t32.subreg())
		// __reg_combine_32_into_64
		if r.t.rsh(32).isConst() && r.t.v>>32 == 0 {
			r.zext()
		} else {
			r.unbound64()
		}
	} else {
		r.t = t64
		// __reg_combine_64_into_32
		r.unbound32()
		if r.smin >= -1<<31 && r.smax <= 1<<31-1 {
			r.s32min, r.s32max = int32(r.smin), int32(r.smax)
		}
		if r.umax <= 1<<32-1 {
			r.u32min, r.u32max = uint32(r.umin), uint32(r.umax)
		}
	}
	r.kernelSync(true)
}
