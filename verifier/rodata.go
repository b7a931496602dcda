package verifier

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// ELFOptions are what a loader knows beyond the object.
type ELFOptions struct {
	// Kconfig is the kernel configuration libbpf fills .kconfig externs from, and Version
	// the kernel's version (LINUX_KERNEL_VERSION): btfmodel.KconfigData, the rules the kernel
	// backend applies too (kernel.KconfigFor gives a profile's). With Kconfig the .kconfig map
	// has its contents and is frozen, as libbpf leaves it; nil leaves them unknown.
	Kconfig btfmodel.Kconfig
	Version btfmodel.Version
}

// sectionData is a data section's initial contents, and whether libbpf (and cilium/ebpf, and
// the kernel backend) freeze it: .rodata* are BPF_F_RDONLY_PROG and frozen after their
// contents are written (bpf_object__populate_internal_map).
func sectionData(name string, m *ebpf.MapSpec) ([]byte, bool) {
	if len(m.Contents) != 1 {
		return nil, false
	}
	k, kok := m.Contents[0].Key.(uint32)
	v, vok := m.Contents[0].Value.([]byte)
	if !kok || !vok || k != 0 {
		return nil, false
	}
	return v, strings.HasPrefix(name, ".rodata")
}

// kconfigData is the .kconfig map's contents as libbpf's bpf_object__resolve_externs writes
// them (nil, false when o has no configuration, or an extern cannot be resolved: the kernel
// backend then refuses the object).
func (o ELFOptions) kconfigData(ds *btf.Datasec, obj []byte) ([]byte, bool) {
	if o.Kconfig == nil {
		return nil, false
	}
	weak := map[string]bool{}
	if f, err := elf.NewFile(bytes.NewReader(obj)); err == nil {
		syms, _ := f.Symbols()
		for _, sym := range syms {
			if elf.ST_BIND(sym.Info) == elf.STB_WEAK && sym.Section == elf.SHN_UNDEF {
				weak[sym.Name] = true
			}
		}
	}
	data, err := btfmodel.KconfigData(ds, o.Version, o.Kconfig, weak)
	if err != nil {
		return nil, false
	}
	return data, true
}

// mapValueRead is the value a load from a map value gets in check_mem_access: from a
// read-only frozen array (bpf_map_is_rdonly: BPF_F_RDONLY_PROG and frozen) at a constant
// offset, the bytes there (bpf_map_direct_read via array_map_direct_value_addr, sizes 1, 2,
// 4 and 8, host order: both modelled architectures are little-endian); a narrow load is
// then zero- or sign-extended as any other. Anything else, a variable offset included, is
// an unknown scalar. off already holds the pointer's fixed offset; bounds are checked.
func (c *checker) mapValueRead(r *reg, off, size int) scalar {
	m := c.prog.Maps[r.mapIdx]
	if !m.ReadOnly || !m.Frozen || m.Type != "array" || m.MaxEntries != 1 || !r.v.isConst() {
		return unknownScalar()
	}
	at := int64(off) + int64(r.v.val())
	var b [8]byte
	for i := 0; i < size && i < len(b); i++ {
		if j := at + int64(i); j >= 0 && j < int64(len(m.Data)) {
			b[i] = m.Data[j] // past Data: zeros, as the map was created
		}
	}
	switch size {
	case 1:
		return constScalar(uint64(b[0]))
	case 2:
		return constScalar(uint64(binary.LittleEndian.Uint16(b[:])))
	case 4:
		return constScalar(uint64(binary.LittleEndian.Uint32(b[:])))
	case 8:
		return constScalar(binary.LittleEndian.Uint64(b[:]))
	}
	return unknownScalar()
}
