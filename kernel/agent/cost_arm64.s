#include "textflag.h"

// func counter() uint64: CNTVCT_EL0 (mrs x0, cntvct_el0); under qemu -icount shift=0 the
// virtual clock advances one ns per guest instruction and the counter ticks at CNTFRQ_EL0.
TEXT ·counter(SB),NOSPLIT,$0-8
	WORD $0xd53be040
	MOVD R0, ret+0(FP)
	RET

// func counterHz() uint64: CNTFRQ_EL0 (mrs x0, cntfrq_el0).
TEXT ·counterHz(SB),NOSPLIT,$0-8
	WORD $0xd53be000
	MOVD R0, ret+0(FP)
	RET

// func knownLoop(n uint64) uint64: the ticks across n iterations of a two-instruction loop
// (SUBS, B.NE), plus a constant: the instructions between the two reads outside the loop.
TEXT ·knownLoop(SB),NOSPLIT,$0-16
	MOVD n+0(FP), R1
	WORD $0xd53be040
	MOVD R0, R2
loop:
	SUBS $1, R1, R1
	BNE  loop
	WORD $0xd53be040
	SUB  R2, R0, R0
	MOVD R0, ret+8(FP)
	RET
