package verifier

import "testing"

// tnum soundness against the sets the tnums stand for: every product of two members of a
// and b is a member of a.mul(b) (tnum_mul's contract; the kernel's own tnum selftests check
// the same). Every tnum over the low four bits, with the rest known (zero or all ones).
func TestTnumMulSound(t *testing.T) {
	var ts []tnum
	for _, hi := range []uint64{0, ^uint64(0xf)} {
		for m := uint64(0); m < 16; m++ {
			for v := uint64(0); v < 16; v++ {
				if v&m == 0 {
					ts = append(ts, tnum{hi | v, m})
				}
			}
		}
	}
	members := func(a tnum) []uint64 {
		var out []uint64
		for x := uint64(0); x < 16; x++ {
			if x&^a.m == 0 {
				out = append(out, a.v|x)
			}
		}
		return out
	}
	for _, a := range ts {
		for _, b := range ts {
			p := a.mul(b)
			for _, x := range members(a) {
				for _, y := range members(b) {
					if !p.in(tconst(x * y)) {
						t.Fatalf("%v * %v = %v: %#x * %#x = %#x is not in it", a, b, p, x, y, x*y)
					}
				}
			}
		}
	}
}
