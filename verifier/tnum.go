package verifier

import "fmt"

// tnum is the kernel's tristate number (kernel/bpf/tnum.c): bits set in mask are unknown,
// the others equal value's.
type tnum struct{ v, m uint64 }

var tnumUnknown = tnum{0, ^uint64(0)}

func tconst(x uint64) tnum           { return tnum{x, 0} }
func (a tnum) isConst() bool         { return a.m == 0 }
func (a tnum) isUnknown() bool       { return a.m == ^uint64(0) }
func (a tnum) String() string        { return fmt.Sprintf("(%#x; %#x)", a.v, a.m) }
func (a tnum) aligned(n uint64) bool { return (a.v|a.m)&(n-1) == 0 }

// tnumRange is tnum_range: the smallest tnum covering [min, max].
func tnumRange(min, max uint64) tnum {
	chi := min ^ max
	bits := 64 - clz64(chi)
	if bits > 63 {
		return tnumUnknown
	}
	delta := (uint64(1) << bits) - 1
	return tnum{min &^ delta, delta}
}

func clz64(x uint64) uint {
	n := uint(0)
	for i := 63; i >= 0; i-- {
		if x&(1<<uint(i)) != 0 {
			return n
		}
		n++
	}
	return 64
}

func (a tnum) add(b tnum) tnum {
	sm := a.m + b.m
	sv := a.v + b.v
	sigma := sm + sv
	chi := sigma ^ sv
	mu := chi | a.m | b.m
	return tnum{sv &^ mu, mu}
}

func (a tnum) sub(b tnum) tnum {
	dv := a.v - b.v
	alpha := dv + a.m
	beta := dv - b.m
	chi := alpha ^ beta
	mu := chi | a.m | b.m
	return tnum{dv &^ mu, mu}
}

func (a tnum) and(b tnum) tnum {
	alpha := a.v | a.m
	beta := b.v | b.m
	v := a.v & b.v
	return tnum{v, alpha & beta &^ v}
}

func (a tnum) or(b tnum) tnum {
	v := a.v | b.v
	mu := a.m | b.m
	return tnum{v, mu &^ v}
}

func (a tnum) xor(b tnum) tnum {
	v := a.v ^ b.v
	mu := a.m | b.m
	return tnum{v &^ mu, mu}
}

func (a tnum) lsh(s uint) tnum { return tnum{a.v << s, a.m << s} }
func (a tnum) rsh(s uint) tnum { return tnum{a.v >> s, a.m >> s} }
func (a tnum) arsh(s uint, bits uint) tnum {
	if bits == 32 {
		return tnum{uint64(uint32(int32(uint32(a.v)) >> s)), uint64(uint32(int32(uint32(a.m)) >> s))}
	}
	return tnum{uint64(int64(a.v) >> s), uint64(int64(a.m) >> s)}
}

// mul is tnum_mul (the 2021 version): exact for constants, sound otherwise.
func (a tnum) mul(b tnum) tnum {
	accV := a.v * b.v
	accM := tnum{0, 0}
	for a.v != 0 || a.m != 0 {
		if a.v&1 != 0 {
			accM = accM.add(tnum{0, b.m})
		} else if a.m&1 != 0 {
			accM = accM.add(tnum{0, b.v | b.m})
		}
		a = a.rsh(1)
		b = b.lsh(1)
	}
	return tnum{accV, 0}.add(accM)
}

// intersect is tnum_intersect.
func (a tnum) intersect(b tnum) tnum {
	v := a.v | b.v
	mu := a.m & b.m
	return tnum{v &^ mu, mu}
}

// cast keeps the low size bytes (tnum_cast).
func (a tnum) cast(size uint) tnum {
	if size >= 8 {
		return a
	}
	mask := (uint64(1) << (size * 8)) - 1
	return tnum{a.v & mask, a.m & mask}
}

func (a tnum) subreg() tnum { return a.cast(4) }

// in is tnum_in: every value of b is a value of a.
func (a tnum) in(b tnum) bool {
	if b.m&^a.m != 0 {
		return false
	}
	return a.v == b.v&^a.m
}
