package verifier

import "math"

// Scalar ALU as adjust_scalar_min_max_vals (kernel/bpf/verifier.c) computes it, per
// profile: the printed bounds of "At program exit ... smin=... smax=..." and every range
// check depend on these exact steps, so they are transcribed rather than approximated.

// kernelSync is reg_bounds_sync: 6.12's (with the 6.7 cross 32/64-bit deductions) or 6.1's.
func (s *scalar) kernelSync(old bool) { s.syncWith(old, false) }

// syncWith is kernelSync; needSign is 7.2's form (CapVerifierTnumSignedNeedSign): signed
// 64-bit bounds come from the tnum only when its sign bit is known, and not from the
// 32-bit bounds (__reg_deduce_mixed_bounds' s64 half).
func (s *scalar) syncWith(old, needSign bool) {
	s.updateBoundsWith(needSign)
	if old {
		s.deduce32v61()
		s.deduce64v61()
		s.boundOffset()
	} else {
		s.deduceWith(needSign)
		s.deduceWith(needSign)
		s.boundOffset()
	}
	s.updateBoundsWith(needSign)
}

// updateBounds is __update_reg_bounds: bounds from the tnum.
func (s *scalar) updateBounds() { s.updateBoundsWith(false) }

func (s *scalar) updateBoundsWith(needSign bool) {
	t32 := s.t.subreg()
	s.s32min = max(s.s32min, int32(uint32(t32.v|(t32.m&0x80000000))))
	s.s32max = min(s.s32max, int32(uint32(t32.v|(t32.m&0x7fffffff))))
	s.u32min = max(s.u32min, uint32(t32.v))
	s.u32max = min(s.u32max, uint32(t32.v|t32.m))
	if !needSign || s.t.m&(1<<63) == 0 {
		s.smin = max(s.smin, int64(s.t.v|(s.t.m&(1<<63))))
		s.smax = min(s.smax, int64(s.t.v|(s.t.m&math.MaxInt64)))
	}
	s.umin = max(s.umin, s.t.v)
	s.umax = min(s.umax, s.t.v|s.t.m)
}

// deduce is 6.12's __reg_deduce_bounds.
func (s *scalar) deduce() { s.deduceWith(false) }

func (s *scalar) deduceWith(needSign bool) {
	// __reg32_deduce_bounds
	if s.umin>>32 == s.umax>>32 {
		s.u32min = max(s.u32min, uint32(s.umin))
		s.u32max = min(s.u32max, uint32(s.umax))
		if int32(uint32(s.umin)) <= int32(uint32(s.umax)) {
			s.s32min = max(s.s32min, int32(uint32(s.umin)))
			s.s32max = min(s.s32max, int32(uint32(s.umax)))
		}
	}
	if s.smin>>32 == s.smax>>32 {
		if uint32(s.smin) <= uint32(s.smax) {
			s.u32min = max(s.u32min, uint32(s.smin))
			s.u32max = min(s.u32max, uint32(s.smax))
		}
		if int32(s.smin) <= int32(s.smax) {
			s.s32min = max(s.s32min, int32(s.smin))
			s.s32max = min(s.s32max, int32(s.smax))
		}
	}
	if uint32(s.umin>>32)+1 == uint32(s.umax>>32) && int32(uint32(s.umin)) < 0 && int32(uint32(s.umax)) >= 0 {
		s.s32min = max(s.s32min, int32(uint32(s.umin)))
		s.s32max = min(s.s32max, int32(uint32(s.umax)))
	}
	if uint32(uint64(s.smin)>>32)+1 == uint32(uint64(s.smax)>>32) && int32(s.smin) < 0 && int32(s.smax) >= 0 {
		s.s32min = max(s.s32min, int32(s.smin))
		s.s32max = min(s.s32max, int32(s.smax))
	}
	if int32(s.u32min) <= int32(s.u32max) {
		s.s32min = max(s.s32min, int32(s.u32min))
		s.s32max = min(s.s32max, int32(s.u32max))
	}
	if uint32(s.s32min) <= uint32(s.s32max) {
		s.u32min = max(s.u32min, uint32(s.s32min))
		s.u32max = min(s.u32max, uint32(s.s32max))
	}
	// __reg64_deduce_bounds
	if int64(s.umin) <= int64(s.umax) {
		s.smin = max(s.smin, int64(s.umin))
		s.smax = min(s.smax, int64(s.umax))
	}
	if uint64(s.smin) <= uint64(s.smax) {
		s.umin = max(s.umin, uint64(s.smin))
		s.umax = min(s.umax, uint64(s.smax))
	} else if s.umax < uint64(s.smin) {
		// The s64 range crosses the sign boundary and the u64 range meets only one of its
		// ends (a 2025 upstream fix Debian's 6.12 carries: the kernel prints its bounds).
		s.smin = int64(s.umin)
		s.umax = min(s.umax, uint64(s.smax))
	} else if uint64(s.smax) < s.umin {
		s.smax = int64(s.umax)
		s.umin = max(s.umin, uint64(s.smin))
	}
	// __reg_deduce_mixed_bounds
	const hi = ^uint64(0xffffffff)
	s.umin = max(s.umin, s.umin&hi|uint64(s.u32min))
	s.umax = min(s.umax, s.umax&hi|uint64(s.u32max))
	if !needSign {
		s.smin = max(s.smin, int64(uint64(s.smin)&hi|uint64(s.u32min)))
		s.smax = min(s.smax, int64(uint64(s.smax)&hi|uint64(s.u32max)))
	}
	if uint32(s.s32min) <= uint32(s.s32max) {
		s.umin = max(s.umin, s.umin&hi|uint64(uint32(s.s32min)))
		s.umax = min(s.umax, s.umax&hi|uint64(uint32(s.s32max)))
		if !needSign {
			s.smin = max(s.smin, int64(uint64(s.smin)&hi|uint64(uint32(s.s32min))))
			s.smax = min(s.smax, int64(uint64(s.smax)&hi|uint64(uint32(s.s32max))))
		}
	}
}

// deduce32v61 is 6.1's __reg32_deduce_bounds.
func (s *scalar) deduce32v61() {
	if s.s32min >= 0 || s.s32max < 0 {
		lo := max(uint32(s.s32min), s.u32min)
		hi := min(uint32(s.s32max), s.u32max)
		s.s32min, s.u32min = int32(lo), lo
		s.s32max, s.u32max = int32(hi), hi
		return
	}
	if int32(s.u32max) >= 0 {
		s.s32min = int32(s.u32min)
		hi := min(uint32(s.s32max), s.u32max)
		s.s32max, s.u32max = int32(hi), hi
	} else if int32(s.u32min) < 0 {
		lo := max(uint32(s.s32min), s.u32min)
		s.s32min, s.u32min = int32(lo), lo
		s.s32max = int32(s.u32max)
	}
}

// deduce64v61 is 6.1's __reg64_deduce_bounds.
func (s *scalar) deduce64v61() {
	if s.smin >= 0 || s.smax < 0 {
		lo := max(uint64(s.smin), s.umin)
		hi := min(uint64(s.smax), s.umax)
		s.smin, s.umin = int64(lo), lo
		s.smax, s.umax = int64(hi), hi
		return
	}
	if int64(s.umax) >= 0 {
		s.smin = int64(s.umin)
		hi := min(uint64(s.smax), s.umax)
		s.smax, s.umax = int64(hi), hi
	} else if int64(s.umin) < 0 {
		lo := max(uint64(s.smin), s.umin)
		s.smin, s.umin = int64(lo), lo
		s.smax = int64(s.umax)
	}
}

// boundOffset is __reg_bound_offset: the tnum from the unsigned bounds (Debian's 6.1 has
// the 2023 fix that takes the low half from the new 64-bit tnum, as 6.12 does).
func (s *scalar) boundOffset() {
	t64 := s.t.intersect(tnumRange(s.umin, s.umax))
	t32 := t64.subreg().intersect(tnumRange(uint64(s.u32min), uint64(s.u32max)))
	s.t = t64.rsh(32).lsh(32).or(t32)
}

func (s *scalar) unbound32() {
	s.s32min, s.s32max, s.u32min, s.u32max = math.MinInt32, math.MaxInt32, 0, math.MaxUint32
}

func (s *scalar) unbound64() {
	s.smin, s.smax, s.umin, s.umax = math.MinInt64, math.MaxInt64, 0, math.MaxUint64
}

// zext is zext_32_to_64 (__reg_assign_32_into_64).
func (s *scalar) zext() {
	s.t = s.t.subreg()
	s.umin, s.umax = uint64(s.u32min), uint64(s.u32max)
	if s.s32min >= 0 && s.s32max >= 0 {
		s.smin, s.smax = int64(s.s32min), int64(s.s32max)
	} else {
		s.smin, s.smax = 0, math.MaxUint32
	}
}

// markKnown is __mark_reg_known.
func markKnown(v uint64) scalar { return constScalar(v) }
