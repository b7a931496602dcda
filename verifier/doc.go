// Package verifier models the kernel verifier's rules for trampoline-attached programs
// (fentry, fexit, fmod_ret, LSM): attach checks, ctx access, PTR_TO_BTF_ID walks, return codes.
//
// It may import jit and btfmodel.
package verifier
