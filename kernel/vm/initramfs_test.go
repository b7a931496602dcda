package vm

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/cavaliergopher/cpio"
)

func TestBuildInitramfs(t *testing.T) {
	img, err := BuildInitramfs([]File{
		{Name: "/init", Mode: 0o755, Data: []byte("\x7fELF...")},
		{Name: "/trampjit/request.json", Mode: 0o644, Data: []byte(`{"info":true}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	r := cpio.NewReader(zr)
	got := map[string]string{}
	modes := map[string]cpio.FileMode{}
	var order []string
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		got[h.Name] = string(b)
		modes[h.Name] = h.Mode
		order = append(order, h.Name)
	}
	if got["init"] != "\x7fELF..." || got["trampjit/request.json"] != `{"info":true}` {
		t.Errorf("contents: %q", got)
	}
	if modes["init"] != cpio.TypeReg|0o755 {
		t.Errorf("/init mode %o", modes["init"])
	}
	for _, d := range []string{"dev", "proc", "sys", "trampjit"} {
		if !modes[d].IsDir() {
			t.Errorf("%s is not a directory (mode %o)", d, modes[d])
		}
	}
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	if pos["trampjit"] > pos["trampjit/request.json"] {
		t.Error("a directory must come before its files")
	}
	// The newc magic, as the kernel's unpacker (init/initramfs.c) expects.
	zr2, _ := gzip.NewReader(bytes.NewReader(img))
	head := make([]byte, 6)
	io.ReadFull(zr2, head)
	if string(head) != "070701" {
		t.Errorf("magic %q, want 070701", head)
	}
}
