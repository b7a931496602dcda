package btfmodel

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// ApplyCORE resolves the CO-RE relocations an ELF loader recorded on insns against a
// kernel's BTF, as libbpf and cilium/ebpf do at load time. Local type ids go into local (the
// program's own BTF, when it is sent along), or a scratch builder when local is nil.
func ApplyCORE(insns asm.Instructions, kernel *btf.Spec, local *btf.Builder) error {
	var relos []*btf.CORERelocation
	var at []int
	for i := range insns {
		if r := btf.CORERelocationMetadata(&insns[i]); r != nil {
			relos = append(relos, r)
			at = append(at, i)
		}
	}
	if len(relos) == 0 {
		return nil
	}
	if kernel == nil {
		return fmt.Errorf("%d CO-RE relocations and no kernel BTF to apply them against", len(relos))
	}
	if local == nil {
		var err error
		if local, err = btf.NewBuilder(nil, nil); err != nil {
			return err
		}
	}
	fixups, err := btf.CORERelocate(relos, []*btf.Spec{kernel}, binary.LittleEndian, local.Add)
	if err != nil {
		return fmt.Errorf("apply CO-RE relocations: %w", err)
	}
	for i, f := range fixups {
		if err := f.Apply(&insns[at[i]]); err != nil {
			return fmt.Errorf("CO-RE fixup for %s: %w", relos[i], err)
		}
	}
	return nil
}
