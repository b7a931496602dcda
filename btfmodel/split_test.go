package btfmodel

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// splitBTF writes module-style split BTF by hand (the layout of include/uapi/linux/btf.h):
// its type ids continue after the base's, its string offsets after the base's strings. It
// holds "long g(int x)" whose int comes from the base.
func splitBTF(t *testing.T, base []byte, baseTypes, intID uint32) []byte {
	baseStrLen := binary.LittleEndian.Uint32(base[20:24])
	strs := []byte("g\x00x\x00")
	le := binary.LittleEndian
	var types bytes.Buffer
	w := func(v ...uint32) {
		for _, x := range v {
			binary.Write(&types, le, x)
		}
	}
	protoID := baseTypes + 1
	// FUNC_PROTO (kind 13), one param "x" of type int, returning int.
	w(0, 13<<24|1, intID, baseStrLen+2, intID)
	// FUNC (kind 12) "g", global linkage, type protoID.
	w(baseStrLen, 12<<24|1, protoID)
	var out bytes.Buffer
	binary.Write(&out, le, uint16(0xeb9f))
	out.Write([]byte{1, 0})
	binary.Write(&out, le, []uint32{24, 0, uint32(types.Len()), uint32(types.Len()), uint32(len(strs))})
	out.Write(types.Bytes())
	out.Write(strs)
	return out.Bytes()
}

func TestLoadSplit(t *testing.T) {
	raw := marshal(t, "long f(int a)")
	base, err := Load(bytes.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	var n, intID uint32
	for typ := range base.All() {
		id, _ := base.TypeID(typ)
		n = max(n, uint32(id))
		if CName(typ) == "int" {
			intID = uint32(id)
		}
	}
	dir := t.TempDir()
	basePath, splitPath := filepath.Join(dir, "vmlinux"), filepath.Join(dir, "mod")
	os.WriteFile(basePath, raw, 0o644)
	os.WriteFile(splitPath, splitBTF(t, raw, n, intID), 0o644)
	bspec, err := LoadFile(basePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := LoadFile(splitPath, bspec)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := FuncByName(spec, "g")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Distill(fn, Kernel612)
	if err != nil {
		t.Fatal(err)
	}
	if m.Prototype() != "int g(int x)" || m.Args[0].Size != 4 || m.Args[0].Flags != SignedArg {
		t.Errorf("split model: %s %+v", m.Prototype(), m.Args)
	}
	// Without its base the split file cannot be read.
	if _, err := LoadFile(splitPath, nil); err == nil {
		t.Error("split BTF loaded without a base")
	}
}

func TestLoadELF(t *testing.T) {
	spec, err := LoadFile("testdata/funcs.bpf.o", nil)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := FuncByName(spec, "pick")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Distill(fn, Kernel612)
	if err != nil {
		t.Fatal(err)
	}
	// A pointer and a signed int; the object's BTF names them as the C source does.
	if m.Prototype() != "int pick(struct pair *p, int x)" || m.NrRegs() != 2 || m.Args[1].Flags != SignedArg {
		t.Errorf("pick: %s %+v", m.Prototype(), m.Args)
	}
}
