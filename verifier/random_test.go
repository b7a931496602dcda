package verifier

import (
	"encoding/binary"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
)

// randomProgram builds raw instructions from the opcodes trampoline programs use, with
// registers, offsets and immediates biased towards the interesting values. Jumps stay in
// range most of the time; the last instruction is always exit.
func randomProgram(r *rand.Rand, n int) []byte {
	ops := []byte{
		0xb7, 0xbf, 0x07, 0x0f, 0x17, 0x1f, 0x57, 0x5f, 0x47, 0x67, 0x77, 0xc7, 0x27, 0x37, 0x97, 0x87, 0xdc, 0xd7,
		0xb4, 0xbc, 0x04, 0x0c, 0x54, 0x64, 0x74, 0x84,
		0x79, 0x61, 0x69, 0x71, 0x81, 0x89, // ldx dw/w/h/b, ldsx w/h
		0x7b, 0x63, 0x6b, 0x73, 0x7a, 0x62, 0xdb, 0xc3, // stx, st, atomic
		0x05, 0x15, 0x1d, 0x55, 0x5d, 0x25, 0x35, 0xa5, 0xb5, 0x65, 0xc5, 0x45, 0x16, 0x56, 0xa6,
		0x85, 0x95, 0x18,
	}
	offs := []int16{0, 8, 16, 24, -8, -16, 4, 2, 1, 96, -4}
	imms := []int32{0, 1, -1, 8, 16, -8, 0xff, 5, 14, 113, 183, 184, 185, 173, 1, 2, 6, 7, 64, 4096}
	var out []byte
	put := func(op, dst, src byte, off int16, imm int32) {
		var b [8]byte
		b[0], b[1] = op, dst|src<<4
		binary.LittleEndian.PutUint16(b[2:], uint16(off))
		binary.LittleEndian.PutUint32(b[4:], uint32(imm))
		out = append(out, b[:]...)
	}
	// Prologue: every register initialised, ctx and stack pointers in several registers.
	put(0xbf, 6, 1, 0, 0)    // r6 = r1
	put(0x79, 7, 1, 0, 0)    // r7 = ctx[0]
	put(0xbf, 8, 10, 0, 0)   // r8 = r10
	put(0x07, 8, 0, 0, -16)  // r8 += -16
	put(0x7a, 10, 0, -8, 0)  // *(u64 *)(r10 -8) = 0
	put(0x7a, 10, 0, -16, 0) // *(u64 *)(r10 -16) = 0
	for reg := byte(0); reg <= 9; reg++ {
		if reg != 1 && reg != 6 && reg != 7 && reg != 8 {
			put(0xb7, reg, 0, 0, int32(reg))
		}
	}
	for i := 0; i < n; i++ {
		op := ops[r.Intn(len(ops))]
		dst, src := byte(r.Intn(10)), byte(r.Intn(11))
		if r.Intn(3) == 0 {
			src = 1
		}
		if r.Intn(3) == 0 {
			src = 10
		}
		off, imm := offs[r.Intn(len(offs))], imms[r.Intn(len(imms))]
		switch {
		case op == 0x85:
			put(op, 0, 0, 0, imm)
		case op == 0x95:
			put(op, 0, 0, 0, 0)
		case op == 0x18:
			put(op, dst, byte(r.Intn(2)), 0, imm)
			put(0, 0, 0, 0, int32(r.Intn(2)))
			i++
		case op&0x07 == 0x05 || op&0x07 == 0x06:
			if op&0x08 != 0 {
				imm = 0
			} else {
				src = 0
			}
			if op&0xf0 == 0 {
				dst, src, imm = 0, 0, 0
			}
			put(op, dst, src, int16(r.Intn(n-i))-int16(r.Intn(2)), imm)
		case op == 0xdb || op == 0xc3:
			put(op, dst, src, off, []int32{0, 1, 0x40, 0xe1}[r.Intn(4)])
		case op&0x07 == 0x04 || op&0x07 == 0x07: // ALU: K forms have no src, X forms no imm
			switch {
			case op&0xf0 == 0x80 || op&0xf0 == 0xd0:
				put(op, dst, 0, 0, []int32{16, 32, 64}[r.Intn(3)])
			case op&0x08 != 0:
				put(op, dst, src, 0, 0)
			default:
				put(op, dst, 0, 0, imm)
			}
		case op == 0x7a || op == 0x62:
			put(op, dst, 0, off, imm)
		case op&0x07 == 0x01 || op&0x07 == 0x03:
			put(op, dst, src, off, 0)
		default:
			put(op, dst, src, off, imm)
		}
	}
	put(0xb7, 0, 0, 0, 0)
	put(0x95, 0, 0, 0, 0)
	return out
}

// TestRandomPrograms runs generated programs through every profile: the model must not
// panic, must end every log with the stats line, and must give an error line (or errno)
// whenever it rejects.
func TestRandomPrograms(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	secs := []string{"fentry/tcp_v4_connect", "fexit/bpf_fentry_test7", "fmod_ret/security_file_open", "lsm/file_open", "fentry/bpf_fentry_test4"}
	maps := []Map{{Name: "m", Type: "hash", KeySize: 4, ValueSize: 16, MaxEntries: 8}}
	n := 300
	if s := os.Getenv("VERIFIER_RANDOM_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		n = 60
	}
	accepted := 0
	for i := 0; i < n; i++ {
		raw := randomProgram(r, 3+r.Intn(12))
		insns, err := decodeRaw(raw)
		if err != nil {
			continue
		}
		for _, key := range profiles {
			p := Program{Name: "rand", Section: secs[i%len(secs)], License: "GPL", Maps: maps, Instructions: insns}
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("%s: panic %v on\n%s", key, v, insns)
					}
				}()
				res := Check(p, envFor(t, key))
				if last := res.Log[len(res.Log)-1]; !strings.HasPrefix(last, "processed ") {
					t.Fatalf("%s: log ends with %q", key, last)
				}
				if !res.Accepted && res.Errno == "" {
					t.Fatalf("%s: rejected without errno: %+v", key, res)
				}
				if res.Accepted {
					accepted++
				}
			}()
		}
	}
	t.Logf("%d of %d runs accepted", accepted, 3*n)
}
