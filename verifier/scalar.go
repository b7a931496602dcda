package verifier

import "math"

// scalar is a SCALAR_VALUE's knowledge: a tnum plus signed/unsigned 64- and 32-bit bounds,
// kept consistent by sync (the kernel's reg_bounds_sync, simplified).
type scalar struct {
	t              tnum
	smin, smax     int64
	umin, umax     uint64
	s32min, s32max int32
	u32min, u32max uint32
}

func unknownScalar() scalar {
	return scalar{t: tnumUnknown, smin: math.MinInt64, smax: math.MaxInt64, umax: math.MaxUint64,
		s32min: math.MinInt32, s32max: math.MaxInt32, u32max: math.MaxUint32}
}

func constScalar(x uint64) scalar {
	return scalar{t: tconst(x), smin: int64(x), smax: int64(x), umin: x, umax: x,
		s32min: int32(x), s32max: int32(x), u32min: uint32(x), u32max: uint32(x)}
}

// rangeScalar is an unsigned range [lo, hi] (e.g. a zero-extending narrow load).
func rangeScalar(lo, hi uint64) scalar {
	s := unknownScalar()
	s.umin, s.umax = lo, hi
	s.t = tnumRange(lo, hi)
	s.sync()
	return s
}

func (s scalar) isConst() bool { return s.t.isConst() }
func (s scalar) val() uint64   { return s.t.v }

func (s scalar) isUnbounded() bool {
	return s.smin == math.MinInt64 && s.smax == math.MaxInt64 && s.umin == 0 && s.umax == math.MaxUint64
}

// sync tightens the bounds against each other and the tnum (reg_bounds_sync).
func (s *scalar) sync() {
	for i := 0; i < 2; i++ {
		// tnum -> 64-bit unsigned.
		s.umin = max(s.umin, s.t.v)
		s.umax = min(s.umax, s.t.v|s.t.m)
		// 64-bit signed <-> unsigned when the sign is known.
		if s.smin >= 0 {
			s.umin = max(s.umin, uint64(s.smin))
			s.umax = min(s.umax, uint64(s.smax))
		}
		if s.umax <= math.MaxInt64 {
			s.smin = max(s.smin, int64(s.umin))
			s.smax = min(s.smax, int64(s.umax))
		} else if int64(s.umin) < 0 { // whole range negative
			s.smin = max(s.smin, int64(s.umin))
			s.smax = min(s.smax, int64(s.umax))
		}
		// tnum <- ranges.
		if s.umin <= s.umax {
			s.t = s.t.intersect(tnumRange(s.umin, s.umax))
		}
		// 32-bit from tnum.
		lo := s.t.subreg()
		s.u32min = max(s.u32min, uint32(lo.v))
		s.u32max = min(s.u32max, uint32(lo.v|lo.m))
		// 32-bit from 64-bit when the upper half is fixed.
		if s.umax>>32 == s.umin>>32 {
			s.u32min = max(s.u32min, uint32(s.umin))
			s.u32max = min(s.u32max, uint32(s.umax))
			if int32(uint32(s.umin)) <= int32(uint32(s.umax)) {
				s.s32min = max(s.s32min, int32(uint32(s.umin)))
				s.s32max = min(s.s32max, int32(uint32(s.umax)))
			}
		}
		if s.smin >= math.MinInt32 && s.smax <= math.MaxInt32 {
			s.s32min = max(s.s32min, int32(s.smin))
			s.s32max = min(s.s32max, int32(s.smax))
		}
		// 32-bit signed <-> unsigned.
		if s.s32min >= 0 {
			s.u32min = max(s.u32min, uint32(s.s32min))
			s.u32max = min(s.u32max, uint32(s.s32max))
		}
		if s.u32max <= math.MaxInt32 {
			s.s32min = max(s.s32min, int32(s.u32min))
			s.s32max = min(s.s32max, int32(s.u32max))
		} else if int32(s.u32min) < 0 {
			s.s32min = max(s.s32min, int32(s.u32min))
			s.s32max = min(s.s32max, int32(s.u32max))
		}
		if s.u32min <= s.u32max {
			hi := s.t.rsh(32).lsh(32)
			s.t = hi.or(s.t.subreg().intersect(tnumRange(uint64(s.u32min), uint64(s.u32max))))
		}
		// 64-bit from 32-bit when the upper half is known zero.
		if s.t.m>>32 == 0 && s.t.v>>32 == 0 {
			s.umin = max(s.umin, uint64(s.u32min))
			s.umax = min(s.umax, uint64(s.u32max))
		}
	}
}

// zext32 is the result of a 32-bit operation: the upper half becomes zero.
func (s scalar) zext32() scalar {
	r := unknownScalar()
	r.t = s.t.subreg()
	r.u32min, r.u32max = s.u32min, s.u32max
	r.s32min, r.s32max = s.s32min, s.s32max
	r.umin, r.umax = uint64(s.u32min), uint64(s.u32max)
	r.sync()
	return r
}

func addOverflows(a, b int64) bool {
	c := a + b
	return (a > 0 && b > 0 && c < 0) || (a < 0 && b < 0 && c >= 0)
}

func subOverflows(a, b int64) bool {
	c := a - b
	return (a >= 0 && b < 0 && c < 0) || (a < 0 && b > 0 && c >= 0)
}

// add is scalar_min_max_add on 64 bits.
func (a scalar) add(b scalar) scalar {
	r := unknownScalar()
	r.t = a.t.add(b.t)
	if !addOverflows(a.smin, b.smin) && !addOverflows(a.smax, b.smax) {
		r.smin, r.smax = a.smin+b.smin, a.smax+b.smax
	}
	if a.umin+b.umin >= a.umin && a.umax+b.umax >= a.umax {
		r.umin, r.umax = a.umin+b.umin, a.umax+b.umax
	}
	r.sync()
	return r
}

func (a scalar) sub(b scalar) scalar {
	r := unknownScalar()
	r.t = a.t.sub(b.t)
	if !subOverflows(a.smin, b.smax) && !subOverflows(a.smax, b.smin) {
		r.smin, r.smax = a.smin-b.smax, a.smax-b.smin
	}
	if a.umin >= b.umax {
		r.umin, r.umax = a.umin-b.umax, a.umax-b.umin
	}
	r.sync()
	return r
}

func fromTnum(t tnum) scalar {
	r := unknownScalar()
	r.t = t
	r.sync()
	return r
}

// alu applies a 64-bit ALU operation to two scalars. Division by a known zero gives 0 (the
// kernel patches div/mod by zero at run time); unknown results are unbounded.
func (a scalar) alu(op string, b scalar) scalar {
	if a.isConst() && b.isConst() {
		return constScalar(constALU64(op, a.val(), b.val()))
	}
	switch op {
	case "+=":
		return a.add(b)
	case "-=":
		return a.sub(b)
	case "&=":
		return fromTnum(a.t.and(b.t))
	case "|=":
		return fromTnum(a.t.or(b.t))
	case "^=":
		return fromTnum(a.t.xor(b.t))
	case "*=":
		r := fromTnum(a.t.mul(b.t))
		if a.umax <= math.MaxUint32 && b.umax <= math.MaxUint32 {
			r.umin, r.umax = a.umin*b.umin, a.umax*b.umax
			r.smin, r.smax = math.MinInt64, math.MaxInt64
			r.sync()
		}
		return r
	case "<<=", ">>=", "s>>=":
		if !b.isConst() || b.val() >= 64 {
			return unknownScalar()
		}
		sh := uint(b.val())
		switch op {
		case "<<=":
			return fromTnum(a.t.lsh(sh))
		case ">>=":
			r := fromTnum(a.t.rsh(sh))
			r.umin, r.umax = a.umin>>sh, a.umax>>sh
			r.sync()
			return r
		default:
			r := fromTnum(a.t.arsh(sh, 64))
			r.smin, r.smax = a.smin>>sh, a.smax>>sh
			r.sync()
			return r
		}
	case "/=", "%=":
		if op == "/=" && b.isConst() && b.val() != 0 {
			r := unknownScalar()
			r.umin, r.umax = a.umin/b.val(), a.umax/b.val()
			r.sync()
			return r
		}
		if op == "%=" && b.isConst() && b.val() != 0 {
			return rangeScalar(0, min(a.umax, b.val()-1))
		}
	}
	return unknownScalar()
}

// alu32 applies a 32-bit ALU operation; the result is zero-extended.
func (a scalar) alu32(op string, b scalar) scalar {
	la, lb := a.zext32(), b.zext32()
	if la.isConst() && lb.isConst() {
		return constScalar(uint64(constALU32(op, uint32(la.val()), uint32(lb.val()))))
	}
	switch op {
	case "&=", "|=", ">>=":
		return la.alu(op, lb).zext32()
	case "<<=", "+=", "-=", "*=", "^=":
		return fromTnum(la.alu(op, lb).t.subreg())
	case "s>>=":
		if lb.isConst() && lb.val() < 32 {
			return fromTnum(la.t.arsh(uint(lb.val()), 32).subreg())
		}
	}
	return rangeScalar(0, math.MaxUint32)
}

func constALU64(op string, x, y uint64) uint64 {
	switch op {
	case "+=":
		return x + y
	case "-=":
		return x - y
	case "*=":
		return x * y
	case "/=":
		if y == 0 {
			return 0
		}
		return x / y
	case "%=":
		if y == 0 {
			return x
		}
		return x % y
	case "&=":
		return x & y
	case "|=":
		return x | y
	case "^=":
		return x ^ y
	case "<<=":
		return x << (y & 63)
	case ">>=":
		return x >> (y & 63)
	case "s>>=":
		return uint64(int64(x) >> (y & 63))
	case "s/=":
		if y == 0 {
			return 0
		}
		if int64(x) == math.MinInt64 && int64(y) == -1 {
			return x
		}
		return uint64(int64(x) / int64(y))
	case "s%=":
		if y == 0 {
			return x
		}
		if int64(y) == -1 {
			return 0
		}
		return uint64(int64(x) % int64(y))
	}
	return 0
}

func constALU32(op string, x, y uint32) uint32 {
	switch op {
	case "<<=":
		return x << (y & 31)
	case ">>=":
		return x >> (y & 31)
	case "s>>=":
		return uint32(int32(x) >> (y & 31))
	case "s/=":
		if y == 0 {
			return 0
		}
		if int32(x) == math.MinInt32 && int32(y) == -1 {
			return x
		}
		return uint32(int32(x) / int32(y))
	case "s%=":
		if y == 0 {
			return x
		}
		if int32(y) == -1 {
			return 0
		}
		return uint32(int32(x) % int32(y))
	}
	return uint32(constALU64(op, uint64(x), uint64(y)))
}
