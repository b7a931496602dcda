package btfmodel

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// The .kconfig loads of an object are linked to the .kconfig map at their variable's offset
// (this reads cilium/ebpf's private kconfigMeta: it fails if cilium/ebpf changes it), and
// the map's value is written as libbpf writes it.
func TestLinkKconfig(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("../testdata/verifier/core_kconfig.bpf.o")
	if err != nil {
		t.Fatal(err)
	}
	insns := spec.Programs["kc_hz"].Copy().Instructions
	ds := LinkKconfig(insns, spec.Types)
	if ds == nil {
		t.Fatal("kc_hz: no .kconfig load found")
	}
	linked := 0
	for _, ins := range insns {
		if ins.Reference() == KconfigSection {
			linked++
			if off := uint64(ins.Constant) >> 32; off != 4 {
				t.Errorf("CONFIG_HZ at offset %d, want 4 (after LINUX_KERNEL_VERSION)", off)
			}
		}
	}
	if linked != 1 {
		t.Errorf("%d loads linked, want 1", linked)
	}
	cfg, err := ParseKconfig(strings.NewReader("CONFIG_HZ=250\nCONFIG_BPF_SYSCALL=y\n# CONFIG_EXT4_FS is not set\nCONFIG_DEFAULT_HOSTNAME=\"(none)\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := KconfigData(ds, Version{6, 1, 300}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(data); v != 6<<16|1<<8|255 {
		t.Errorf("LINUX_KERNEL_VERSION %#x, want the patch capped at 255", v)
	}
	if hz := binary.LittleEndian.Uint32(data[4:]); hz != 250 {
		t.Errorf("CONFIG_HZ %d", hz)
	}
	if data[8] != 1 || binary.LittleEndian.Uint32(data[12:]) != 0 || string(data[16:22]) != "(none)" {
		t.Errorf("bool, tristate (n) or string: % x", data)
	}
	delete(cfg, "CONFIG_HZ")
	if _, err := KconfigData(ds, Version{6, 1, 0}, cfg, nil); err == nil {
		t.Error("a strong CONFIG_ the config lacks: no error")
	}
}
