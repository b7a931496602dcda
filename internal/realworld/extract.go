// Package realworld fetches BPF objects that Debian packages ship (libbpf-tools' skeletons,
// systemd's LSM programs, bpftune's tuners, ...) and extracts them from the binaries that
// embed them, for measuring the verifier model on programs it has never seen
// (verifier/realworld_test.go, `make verifier-realworld`, docs/verifier-realworld.md).
// The objects are cached under $XDG_CACHE_HOME/trampjit/realworld and never committed.
package realworld

import (
	"bytes"
	"encoding/binary"
)

// EMBPF is ELF's e_machine for BPF (EM_BPF in include/uapi/linux/elf-em.h).
const EMBPF = 247

// MaxObjectSize bounds one extracted object: clang's BPF objects are kilobytes to a few MiB
// (verifier.MaxELFSize is the reader's own, larger, bound).
const MaxObjectSize = 32 << 20

// Embedded is one BPF ELF object found inside a file.
type Embedded struct {
	Offset int    // where its ELF header starts in the file
	Data   []byte // the object: a sub-slice of the scanned data
}

// ELF64 header and section header layout (the System V gABI): the fields the extractor reads.
const (
	ehSize       = 64 // sizeof(Elf64_Ehdr)
	shEntSize    = 64 // sizeof(Elf64_Shdr)
	offMachine   = 18
	offShoff     = 40
	offEhsize    = 52
	offShentsize = 58
	offShnum     = 60
	shtNobits    = 8
)

var elfMagic = []byte{0x7f, 'E', 'L', 'F'}

// Extract finds the BPF objects embedded in data: 64-bit ELF headers (either byte order) with
// e_machine EM_BPF, each sized from its section header table and sections, the way a skeleton
// (bpftool gen skeleton) or a Go binary (bpf2go) carries one. data is untrusted: every offset
// is bounded by len(data) and maxSize (<= 0 means MaxObjectSize), and a header that does not
// describe a whole object inside data is passed over. Objects do not overlap; scanning goes on
// after the end of each one found.
func Extract(data []byte, maxSize int) []Embedded {
	if maxSize <= 0 || maxSize > MaxObjectSize {
		maxSize = MaxObjectSize
	}
	var out []Embedded
	for i := 0; i+ehSize <= len(data); {
		j := bytes.Index(data[i:], elfMagic)
		if j < 0 {
			break
		}
		at := i + j
		if n := objectSize(data[at:], maxSize); n > 0 {
			out = append(out, Embedded{Offset: at, Data: data[at : at+n : at+n]})
			i = at + n
			continue
		}
		i = at + 1
	}
	return out
}

// objectSize is the size of the BPF ELF object at the start of b, or 0 when b does not start
// with one that fits in b and in maxSize. The object ends at the furthest of its header, its
// section header table and its sections' contents (ELF puts the table last, but nothing
// requires it).
func objectSize(b []byte, maxSize int) int {
	if len(b) < ehSize || !bytes.Equal(b[:4], elfMagic) || b[4] != 2 /* ELFCLASS64 */ || b[6] != 1 /* EV_CURRENT */ {
		return 0
	}
	var bo binary.ByteOrder
	switch b[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return 0
	}
	if bo.Uint16(b[offMachine:]) != EMBPF || bo.Uint16(b[offEhsize:]) != ehSize || bo.Uint16(b[offShentsize:]) != shEntSize {
		return 0
	}
	limit := uint64(min(len(b), maxSize))
	shoff, shnum := bo.Uint64(b[offShoff:]), uint64(bo.Uint16(b[offShnum:]))
	// shnum 0 with a table means the count is in section 0's sh_size (extended numbering):
	// no BPF object needs 65280 sections, so such an object is refused.
	if shnum == 0 || shoff < ehSize || shoff > limit || shnum*shEntSize > limit-shoff {
		return 0
	}
	end := shoff + shnum*shEntSize
	for k := uint64(0); k < shnum; k++ {
		sh := b[shoff+k*shEntSize:]
		typ, off, size := bo.Uint32(sh[4:]), bo.Uint64(sh[24:]), bo.Uint64(sh[32:])
		if typ == shtNobits || size == 0 {
			continue
		}
		if off > limit || size > limit-off {
			return 0
		}
		end = max(end, off+size)
	}
	return int(end)
}
