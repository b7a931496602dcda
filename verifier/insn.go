package verifier

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Raw BPF opcode fields (include/uapi/linux/bpf.h).
const (
	clsLD    = 0x00
	clsLDX   = 0x01
	clsST    = 0x02
	clsSTX   = 0x03
	clsALU   = 0x04
	clsJMP   = 0x05
	clsJMP32 = 0x06
	clsALU64 = 0x07

	modeIMM    = 0x00
	modeABS    = 0x20
	modeIND    = 0x40
	modeMEM    = 0x60
	modeMEMSX  = 0x80
	modeATOMIC = 0xc0

	srcX = 0x08

	pseudoMapFD    = 1
	pseudoMapValue = 2
	pseudoCall     = 1
	pseudoKfunc    = 2
)

// insn is one raw 8-byte instruction; the second half of a ld_imm64 is kept as a filler so
// that indices match the kernel's instruction numbers.
type insn struct {
	code     uint8
	dst, src uint8
	off      int16
	imm      int32
	imm64    uint64 // ld_imm64: the full constant
	mapRef   string // ld_imm64 of a map by symbol (ELF input)
	filler   bool   // second half of ld_imm64
	line     string // source line (BTF line info), if any
}

func (i *insn) class() uint8 { return i.code & 0x07 }
func (i *insn) op() uint8    { return i.code & 0xf0 }
func (i *insn) mode() uint8  { return i.code & 0xe0 }
func (i *insn) isX() bool    { return i.code&srcX != 0 }
func (i *insn) isLdImm64() bool {
	return i.code == clsLD|modeIMM|0x18
}

// size in bytes of a load/store.
func (i *insn) size() int {
	switch i.code & 0x18 {
	case 0x00:
		return 4
	case 0x08:
		return 2
	case 0x10:
		return 1
	}
	return 8
}

// decode turns cilium instructions into raw ones, numbering as the kernel does.
func decode(prog asm.Instructions) ([]insn, error) {
	var out []insn
	for i, ins := range prog {
		var buf bytes.Buffer
		if _, err := ins.Marshal(&buf, binary.LittleEndian); err != nil {
			if !ins.IsBuiltinCall() {
				return nil, fmt.Errorf("instruction %d (%v): %w", i, ins, err)
			}
			// A helper id cilium cannot name (negative, out of range): encode it as is.
			buf.Reset()
			raw := [8]byte{0x85, byte(ins.Dst) | byte(ins.Src)<<4}
			binary.LittleEndian.PutUint16(raw[2:], uint16(ins.Offset))
			binary.LittleEndian.PutUint32(raw[4:], uint32(ins.Constant))
			buf.Write(raw[:])
		}
		b := buf.Bytes()
		r := insn{
			code: b[0], dst: b[1] & 0x0f, src: b[1] >> 4,
			off: int16(binary.LittleEndian.Uint16(b[2:])),
			imm: int32(binary.LittleEndian.Uint32(b[4:])),
		}
		if src := ins.Source(); src != nil {
			r.line = src.String()
		}
		if len(b) == 16 {
			r.imm64 = uint64(uint32(r.imm)) | uint64(binary.LittleEndian.Uint32(b[12:]))<<32
			if (ins.IsLoadFromMap() || ins.Src == pseudoBTFID) && ins.Reference() != "" { // ksym.go: the extern's name
				r.mapRef = ins.Reference()
			}
			out = append(out, r, insn{filler: true, code: b[8], dst: b[9] & 0x0f, src: b[9] >> 4,
				off: int16(binary.LittleEndian.Uint16(b[10:])), imm: int32(binary.LittleEndian.Uint32(b[12:]))})
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// decodeRaw parses little-endian raw instructions (8 bytes each).
func decodeRaw(b []byte) (asm.Instructions, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("raw instructions: %d bytes is not a multiple of 8", len(b))
	}
	return asm.AppendInstructions(nil, bytes.NewReader(b), binary.LittleEndian, "linux")
}
