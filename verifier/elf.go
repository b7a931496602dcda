package verifier

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// LoadELF reads the tracing and LSM programs of an object built by clang
// (SEC("fentry/tcp_v4_connect"), SEC("lsm.s/file_open"), ...) with cilium/ebpf, applies its
// CO-RE relocations against kernel (as libbpf would against the running kernel's BTF), and
// describes the maps it references. Programs of other types are skipped.
func LoadELF(path string, kernel *btf.Spec) ([]Program, error) {
	spec, err := ebpf.LoadCollectionSpec(path)
	if err != nil {
		return nil, err
	}
	var maps []Map
	for name, m := range spec.Maps {
		maps = append(maps, Map{Name: name, Type: strings.ToLower(m.Type.String()), KeySize: m.KeySize,
			ValueSize: m.ValueSize, MaxEntries: m.MaxEntries, ReadOnly: strings.HasPrefix(name, ".rodata")})
	}
	sort.Slice(maps, func(i, j int) bool { return maps[i].Name < maps[j].Name })
	names := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	var progs []Program
	for _, n := range names {
		ps := spec.Programs[n]
		if ps.Type != ebpf.Tracing && ps.Type != ebpf.LSM {
			continue
		}
		insns := ps.Copy().Instructions
		if err := applyCORE(insns, kernel); err != nil {
			return nil, fmt.Errorf("program %s: %w", n, err)
		}
		progs = append(progs, Program{Name: n, Section: ps.SectionName, License: ps.License,
			Maps: maps, Instructions: insns})
	}
	if len(progs) == 0 {
		return nil, fmt.Errorf("%s has no fentry, fexit, fmod_ret or lsm programs", path)
	}
	return progs, nil
}

// applyCORE resolves the instructions' CO-RE relocations against the kernel's BTF.
func applyCORE(insns asm.Instructions, kernel *btf.Spec) error {
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
	local, err := btf.NewBuilder(nil, nil)
	if err != nil {
		return err
	}
	fixups, err := btf.CORERelocate(relos, []*btf.Spec{kernel}, binary.LittleEndian, local.Add)
	if err != nil {
		return fmt.Errorf("CO-RE: %w", err)
	}
	for i, f := range fixups {
		if err := f.Apply(&insns[at[i]]); err != nil {
			return fmt.Errorf("CO-RE, instruction %d: %w", at[i], err)
		}
	}
	return nil
}
