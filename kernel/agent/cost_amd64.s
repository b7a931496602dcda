#include "textflag.h"

// func counter() uint64: the TSC; under qemu -icount shift=0 it advances once per
// guest instruction (cpu_get_ticks is the icount clock).
TEXT ·counter(SB),NOSPLIT,$0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func counterHz() uint64: 0, the TSC has no architectural frequency register.
TEXT ·counterHz(SB),NOSPLIT,$0-8
	MOVQ $0, ret+0(FP)
	RET

// func knownLoop(n uint64) uint64: the ticks across n iterations of a two-instruction loop
// (DECQ, JNZ), plus a constant: the instructions between the two RDTSCs outside the loop.
TEXT ·knownLoop(SB),NOSPLIT,$0-16
	MOVQ n+0(FP), CX
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, R9
loop:
	DECQ CX
	JNZ  loop
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	SUBQ R9, AX
	MOVQ AX, ret+8(FP)
	RET
