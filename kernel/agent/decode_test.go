package main

import (
	"encoding/hex"
	"testing"
)

// Reference images (fentry + fexit on bpf_fentry_test2) at the addresses of their boot.
const (
	ref612amd64 = "554889e54883ec3848895dd8b802000000488945e048897de8488975f048bf0070983e52d91cffe884d6c7ec31ff48897dc848bf005007403d684cff488d75c8e81bcdc7ec4889c34885c07409488d7de8e896fdffff48bf005007403d684cff4889de488d55c8e894cfc7ec488b7de8488b75f0e8e0c644ed488945f80f1f44000031ff48897dc848bf005004403d684cff488d75c8e8c5ccc7ec4889c34885c07409488d7de8e8c8feffff48bf005004403d684cff4889de488d55c8e83ecfc7ec48bf0070983e52d91cffe82fd6c7ec488b45f8488b5dd8c94883c408c3cc"
	ref612arm64 = "fd27bfa9fd030091fd7bbfa9fd030091ff0301d14a0080d2ea0b00f9e00f00f9e11300f9f31b00f9f41f00f900feffd2c06aa0f2008082f2eaca84926ae9a9f26a39d4f240013fd6ff0300f9f3ff95927301b0f21300d0f260020091e1030091ea6285926ae9a9f26a39d4f240013fd614000091600000b4e06300913dffff976002009181020091e2030091ea7e85926ae9a9f26a39d4f240013fd6e00f40f9e11340f9ea2740f95e00001040015fd6e01700f91f2003d5ff0300f9f3ff9592b301b0f21300d0f260020091e1030091ea6285926ae9a9f26a39d4f240013fd614000091600000b4e06300918fffff976002009181020091e2030091ea7e85926ae9a9f26a39d4f240013fd600feffd2c06aa0f2008082f2eabe84926ae9a9f26a39d4f240013fd6f31b40f9f41f40f9e01740f9bf030091fd7bc1a8fd27c1a83e01009120015fd6"
)

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCodeEnd(t *testing.T) {
	ks := &kallsyms{byName: map[string]uint64{}}
	x := unhex(t, ref612amd64)
	page := append(append([]byte(nil), x...), make([]byte, 64)...) // 6.12: garbage after the code
	if n, err := codeEnd("amd64", page, 0xffffffffc0047880, ks); err != nil || n != len(x) {
		t.Errorf("amd64: %d, %v; want %d (ret and int3 included)", n, err, len(x))
	}
	a := unhex(t, ref612arm64)
	fill := append(append([]byte(nil), a...), 0x00, 0x20, 0x20, 0xd4, 0x00, 0x20, 0x20, 0xd4)
	if n, err := codeEnd("arm64", fill, 0, ks); err != nil || n != len(a) {
		t.Errorf("arm64: %d, %v; want %d (up to the brk fill)", n, err, len(a))
	}
	if _, err := codeEnd("arm64", a, 0, ks); err == nil {
		t.Error("arm64 without brk fill must fail")
	}
}

func TestCallsARM64(t *testing.T) {
	// From the capture's listing: im = 0xfff0000003561400, __bpf_tramp_enter is at
	// 0xffffa1cb4f4bd9a8, the fentry program (struct bpf_prog) at 0xffff8000800b5000.
	cs := calls("arm64", unhex(t, ref612arm64), 0xffff8000800edb80)
	if len(cs) != 8 { // the original function is entered by "ret x10", not a call
		t.Fatalf("%d calls, want 8: %x", len(cs), cs)
	}
	if cs[0].target != 0xffffa1cb4f4bd9a8 || cs[0].arg0 != 0xfff0000003561400 {
		t.Errorf("first call %#x(x0=%#x), want __bpf_tramp_enter(im)", cs[0].target, cs[0].arg0)
	}
	if cs[1].arg0 != 0xffff8000800b5000 {
		t.Errorf("__bpf_prog_enter x0 = %#x, want the program", cs[1].arg0)
	}
	if cs[2].target != 0xffff8000800edb80+0x7c-0x30c {
		t.Errorf("bl to bpf_func: %#x", cs[2].target)
	}
}

func TestCallsAMD64(t *testing.T) {
	cs := calls("amd64", unhex(t, ref612amd64), 0xffffffffc0047880)
	if len(cs) != 9 {
		t.Fatalf("%d calls, want 9", len(cs))
	}
	if cs[0].target != 0xffffffffaccc4f30 || cs[0].arg0 != 0xff1cd9523e987000 {
		t.Errorf("first call %#x(rdi=%#x), want __bpf_tramp_enter(im)", cs[0].target, cs[0].arg0)
	}
	if cs[2].arg0 != 0 {
		t.Errorf("the call to bpf_func passes ctx, not an immediate: %#x", cs[2].arg0)
	}
}

func TestPatchSite(t *testing.T) {
	// 6.12 x86: the ENDBR sealed to a 4-byte nop, then the call.
	site := unhex(t, "660f1f00e8a728fb2b8d0437c3cccccc")
	ip, target, kind, err := patchSite("amd64", site, 0xffffffff94093fd0)
	if err != nil || ip != 0xffffffff94093fd4 || target != 0xffffffff94093fd9+0x2bfb28a7 || kind != siteCall {
		t.Errorf("amd64: ip %#x target %#x %s %v", ip, target, kind, err)
	}
	// arm64: "mov x9, x30" then "bl" back 0x100 bytes.
	site = unhex(t, "e9031eaac0ffff97")
	ip, target, kind, err = patchSite("arm64", site, 0x1000)
	if err != nil || ip != 0x1004 || target != 0x1004-0x100 || kind != siteCall {
		t.Errorf("arm64: ip %#x target %#x %s %v", ip, target, kind, err)
	}
	if _, _, _, err := patchSite("amd64", unhex(t, "0f1f440000c3"), 0); err == nil {
		t.Error("an unpatched nop5 must fail")
	}
}

// TestPatchSiteJmp72 uses the sites of a Debian 7.2.13 capture: the 7.x poison
// (0f 1f 40 d6) then a jmp rel32 for fexit (jmp mode), and a rel32 whose bytes hold e8.
func TestPatchSiteJmp72(t *testing.T) {
	const fn = 0xffffffff89001e40
	site := unhex(t, "0f1f40d6e977200537")
	ip, target, kind, err := patchSite("amd64", site, fn)
	if err != nil || ip != fn+4 || kind != siteJmp || target != fn+9+0x37052077 {
		t.Errorf("jmp: ip %#x target %#x %s %v", ip, target, kind, err)
	}
	// A rel32 with an e8 byte must not be taken for a call at +5.
	site = unhex(t, "0f1f40d6e9e8200537")
	if _, target, kind, err := patchSite("amd64", site, fn); err != nil || kind != siteJmp || target != fn+9+0x370520e8 {
		t.Errorf("jmp with e8 in rel32: target %#x %s %v", target, kind, err)
	}
	// No landing pad: a jmp at +0.
	if ip, _, kind, err := patchSite("amd64", unhex(t, "e9000000009090"), fn); err != nil || ip != fn || kind != siteJmp {
		t.Errorf("bare jmp: ip %#x %s %v", ip, kind, err)
	}
	// The old scan took site[4] == e8 as the call whatever came before; an e9 at +0 whose
	// rel32 ends in e8 is a jmp at +0.
	if ip, _, kind, err := patchSite("amd64", unhex(t, "e9112233e8aabbccdd"), fn); err != nil || ip != fn || kind != siteJmp {
		t.Errorf("jmp at +0 with e8 at +4: ip %#x %s %v", ip, kind, err)
	}
}
