package kernel

import (
	"encoding/binary"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
)

// .kconfig externs become libbpf's read-only, frozen .kconfig map, filled for the profile.
func TestProgramsFromELFKconfig(t *testing.T) {
	if _, _, err := KconfigFor("6.12-amd64"); err != nil {
		t.Skipf("no kernel config in the cache: %v", err)
	}
	spec, err := btfmodel.LoadFile("../testdata/kernel/6.12-amd64/vmlinux.btf.xz", nil)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := ProgramsFromELF("../testdata/verifier/core_kconfig.bpf.o", ELFOptions{KernelBTF: spec, Profile: "6.12-amd64"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range progs {
		if p.Name != "kc_version" {
			continue
		}
		for _, m := range p.Maps {
			if m.Name != ".kconfig" {
				continue
			}
			found = true
			if !m.Freeze || m.Flags != 1<<7 || len(m.Data) < 8 {
				t.Fatalf(".kconfig map %+v", m)
			}
			// LINUX_KERNEL_VERSION and CONFIG_HZ are the datasec's first variables
			if v := binary.LittleEndian.Uint32(m.Data); v != 6<<16|12<<8|117 {
				t.Errorf("LINUX_KERNEL_VERSION %#x", v)
			}
			if hz := binary.LittleEndian.Uint32(m.Data[4:]); hz != 250 {
				t.Errorf("CONFIG_HZ %d, Debian builds 250", hz)
			}
		}
	}
	if !found {
		t.Fatal("kc_version has no .kconfig map")
	}
	if _, err := ProgramsFromELF("../testdata/verifier/core_kconfig.bpf.o", ELFOptions{KernelBTF: spec}); err == nil {
		t.Error("no profile: accepted")
	}
}
