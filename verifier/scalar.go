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

// sync tightens the bounds against each other and the tnum (reg_bounds_sync, 6.12's form;
// the ALU uses each profile's own, see bounds.go).
func (s *scalar) sync() { s.kernelSync(false) }

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
