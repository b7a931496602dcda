package realworld

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// objects are clang-built BPF objects of this repository (our own programs), the shape a
// skeleton embeds.
func objects(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range []string{"ctx.bpf.o", "helpers.bpf.o"} {
		b, err := os.ReadFile("../../testdata/verifier/" + f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// host is a fake binary embedding objs between junk, with a non-BPF ELF header first (as
// every skeleton's host binary has).
func host(objs ...[]byte) ([]byte, []int) {
	var b bytes.Buffer
	x86 := make([]byte, 64)
	copy(x86, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1})
	binary.LittleEndian.PutUint16(x86[offMachine:], 62) // EM_X86_64
	b.Write(x86)
	b.WriteString("\x7fELF junk that only looks like a header\x00")
	var offs []int
	for _, o := range objs {
		b.Write(bytes.Repeat([]byte{0xcc}, 13))
		offs = append(offs, b.Len())
		b.Write(o)
	}
	b.WriteString("trailing data")
	return b.Bytes(), offs
}

func TestExtractFindsEmbeddedObjects(t *testing.T) {
	objs := objects(t)
	data, offs := host(objs...)
	got := Extract(data, 0)
	if len(got) != len(objs) {
		t.Fatalf("found %d objects, want %d", len(got), len(objs))
	}
	for i, e := range got {
		if e.Offset != offs[i] {
			t.Errorf("object %d at %#x, want %#x", i, e.Offset, offs[i])
		}
		if !bytes.Equal(e.Data, objs[i]) {
			t.Errorf("object %d: %d bytes, want the %d of the original", i, len(e.Data), len(objs[i]))
		}
	}
}

func TestExtractBounds(t *testing.T) {
	obj := objects(t)[0]
	// Cut short: the section header table is past the end.
	if got := Extract(obj[:len(obj)-1], 0); len(got) != 0 {
		t.Errorf("truncated object: found %d", len(got))
	}
	// Larger than the bound.
	if got := Extract(obj, len(obj)-1); len(got) != 0 {
		t.Errorf("object over maxSize: found %d", len(got))
	}
	if got := Extract(obj, len(obj)); len(got) != 1 {
		t.Errorf("object of exactly maxSize: found %d, want 1", len(got))
	}
	// A section whose contents run past the end of the data.
	bad := bytes.Clone(obj)
	shoff := binary.LittleEndian.Uint64(bad[offShoff:])
	sh := bad[shoff+shEntSize:]              // section 1
	binary.LittleEndian.PutUint32(sh[4:], 1) // SHT_PROGBITS
	binary.LittleEndian.PutUint64(sh[32:], 1<<62)
	if got := Extract(bad, 0); len(got) != 0 {
		t.Errorf("section past the end: found %d", len(got))
	}
	// Another machine.
	other := bytes.Clone(obj)
	binary.LittleEndian.PutUint16(other[offMachine:], 183) // EM_AARCH64
	if got := Extract(other, 0); len(got) != 0 {
		t.Errorf("EM_AARCH64 object: found %d", len(got))
	}
}

// TestExtractSectionsBeyondTable: an object whose last section lies after its section
// header table is sized to include it.
func TestExtractSectionsBeyondTable(t *testing.T) {
	obj := bytes.Clone(objects(t)[0])
	shoff := binary.LittleEndian.Uint64(obj[offShoff:])
	end := uint64(len(obj))
	extra := []byte("contents after the table")
	obj = append(obj, extra...)
	sh := obj[shoff+shEntSize:]
	binary.LittleEndian.PutUint32(sh[4:], 1)
	binary.LittleEndian.PutUint64(sh[24:], end)
	binary.LittleEndian.PutUint64(sh[32:], uint64(len(extra)))
	data, _ := host(obj)
	got := Extract(data, 0)
	if len(got) != 1 || len(got[0].Data) != len(obj) {
		t.Fatalf("got %d objects (%v), want one of %d bytes", len(got), got, len(obj))
	}
}

func TestDedup(t *testing.T) {
	objs := []Object{
		{Package: "b", File: "x", SHA256: "1"},
		{Package: "a", File: "y", SHA256: "2"},
		{Package: "b", File: "z", SHA256: "1"},
	}
	got, copies := Dedup(objs)
	if len(got) != 2 || got[0].Package != "a" || got[1].File != "x" || copies["1"] != 2 {
		t.Errorf("Dedup = %+v, %v", got, copies)
	}
}

// FuzzExtract: any input, no panic, and every object found is an EM_BPF ELF inside the data,
// within the bound, not overlapping the previous one.
func FuzzExtract(f *testing.F) {
	for _, o := range objects(f) {
		data, _ := host(o)
		f.Add(data, 0)
		f.Add(o[:len(o)/2], len(o))
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"), 10)
	f.Fuzz(func(t *testing.T, data []byte, maxSize int) {
		prev := 0
		bound := maxSize
		if bound <= 0 || bound > MaxObjectSize {
			bound = MaxObjectSize
		}
		for _, e := range Extract(data, maxSize) {
			if e.Offset < prev || e.Offset+len(e.Data) > len(data) || len(e.Data) > bound || len(e.Data) < ehSize {
				t.Fatalf("object at %#x of %d bytes: data %d bytes, previous end %#x, bound %d", e.Offset, len(e.Data), len(data), prev, bound)
			}
			if !bytes.Equal(e.Data, data[e.Offset:e.Offset+len(e.Data)]) || objectSize(e.Data, bound) != len(e.Data) {
				t.Fatalf("object at %#x is not the data there, or not self-consistent", e.Offset)
			}
			prev = e.Offset + len(e.Data)
		}
	})
}
