package kernel

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
)

// Maps the object declares with key and value types go to the guest with a BTF blob holding
// both (as libbpf creates them); data sections and sized-only maps go without.
func TestMapFromSpecBTF(t *testing.T) {
	path := "../testdata/verifier/storage.bpf.o"
	kernelBTF, err := btfmodel.LoadFile("../testdata/kernel/6.12-amd64/vmlinux.btf.xz", nil)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := ProgramsFromELF(path, ELFOptions{KernelBTF: kernelBTF})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range progs {
		for _, m := range p.Maps {
			if seen[m.Name] {
				continue
			}
			seen[m.Name] = true
			switch m.Name {
			case "task_st", "inode_st", "sk_st", "st_hash":
				if len(m.BTF) == 0 || m.BTFKeyTypeID == 0 || m.BTFValueTypeID == 0 {
					t.Fatalf("%s: no key/value BTF: %+v", m.Name, m)
				}
				spec, err := btf.LoadSpecFromReader(bytes.NewReader(m.BTF))
				if err != nil {
					t.Fatalf("%s: BTF blob: %v", m.Name, err)
				}
				v, err := spec.TypeByID(btf.TypeID(m.BTFValueTypeID))
				if err != nil {
					t.Fatal(err)
				}
				if s, ok := btf.UnderlyingType(v).(*btf.Struct); !ok || s.Name != "st_val" || s.Size != m.ValueSize {
					t.Fatalf("%s: value type %v, want struct st_val of %d bytes", m.Name, v, m.ValueSize)
				}
				if m.Name != "st_hash" && m.Flags&1 == 0 {
					t.Fatalf("%s: flags %#x: BPF_F_NO_PREALLOC lost", m.Name, m.Flags)
				}
			case ".bss":
				if len(m.BTF) != 0 {
					t.Fatalf(".bss: got a BTF blob; data sections are created without")
				}
			}
		}
	}
	if !seen["task_st"] || !seen[".bss"] {
		t.Fatalf("maps seen: %v", seen)
	}
}
