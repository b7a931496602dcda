package kernel

import (
	"encoding/hex"
	"strings"
	"testing"
)

// Reference images of fentry + fexit on bpf_fentry_test2 captured from Debian's kernels
// under qemu TCG (the project's reference captures), at some boot's addresses.
var refFentryFexitTest2 = map[string]string{
	"6.12-amd64": "554889e54883ec3848895dd8b802000000488945e048897de8488975f048bf0070983e52d91cffe884d6c7ec31ff48897dc848bf005007403d684cff488d75c8e81bcdc7ec4889c34885c07409488d7de8e896fdffff48bf005007403d684cff4889de488d55c8e894cfc7ec488b7de8488b75f0e8e0c644ed488945f80f1f44000031ff48897dc848bf005004403d684cff488d75c8e8c5ccc7ec4889c34885c07409488d7de8e8c8feffff48bf005004403d684cff4889de488d55c8e83ecfc7ec48bf0070983e52d91cffe82fd6c7ec488b45f8488b5dd8c94883c408c3cc",
	"6.1-amd64":  "554889e54883ec3053b802000000488945e048897de8488975f048bf00b475024e0630ffe8a764e7ce31ff48897dd048bf00d006c03d4a50ff488d75d0e82e5ce7ce4889c34885c07409488d7de8e801d6dfff48bf00d006c03d4a50ff4889de488d55d0e8275ee7ce488b7de8488b75f0e8efd646cf488945f80f1f44000031ff48897dd048bf005004c03d4a50ff488d75d0e8d85be7ce4889c34885c07409488d7de8e84fd6dfff48bf005004c03d4a50ff4889de488d55d0e8d15de7ce48bf00b475024e0630ffe83264e7ce488b45f85bc94883c408c3cc",
	"6.12-arm64": "fd27bfa9fd030091fd7bbfa9fd030091ff0301d14a0080d2ea0b00f9e00f00f9e11300f9f31b00f9f41f00f900feffd2c06aa0f2008082f2eaca84926ae9a9f26a39d4f240013fd6ff0300f9f3ff95927301b0f21300d0f260020091e1030091ea6285926ae9a9f26a39d4f240013fd614000091600000b4e06300913dffff976002009181020091e2030091ea7e85926ae9a9f26a39d4f240013fd6e00f40f9e11340f9ea2740f95e00001040015fd6e01700f91f2003d5ff0300f9f3ff9592b301b0f21300d0f260020091e1030091ea6285926ae9a9f26a39d4f240013fd614000091600000b4e06300918fffff976002009181020091e2030091ea7e85926ae9a9f26a39d4f240013fd600feffd2c06aa0f2008082f2eabe84926ae9a9f26a39d4f240013fd6f31b40f9f41f40f9e01740f9bf030091fd7bc1a8fd27c1a83e01009120015fd6",
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSameModuloAddresses(t *testing.T) {
	x := mustHex(t, refFentryFexitTest2["6.12-amd64"])
	y := append([]byte(nil), x...)
	y[0x20] ^= 0xff // inside the first movabs immediate (im)
	y[0x29] ^= 0x10 // inside the rel32 of the call at 0x27
	if err := SameModuloAddresses("amd64", y, x); err != nil {
		t.Errorf("address-only change rejected: %v", err)
	}
	y[0x07] ^= 0x08 // the stack size
	if err := SameModuloAddresses("amd64", y, x); err == nil || !strings.Contains(err.Error(), "+0x4") {
		t.Errorf("stack size change not found at +0x4: %v", err)
	}
	if err := SameModuloAddresses("amd64", x[:len(x)-1], x); err == nil {
		t.Error("a shorter image must differ")
	}

	a := mustHex(t, refFentryFexitTest2["6.12-arm64"])
	b := append([]byte(nil), a...)
	b[0x3c] ^= 0x40 // movk x10 of a helper address
	b[0x7c] ^= 0x01 // bl offset
	if err := SameModuloAddresses("arm64", b, a); err != nil {
		t.Errorf("address-only change rejected: %v", err)
	}
	b[0x14] ^= 0x20 // mov x10, #2 (nr_args) is a constant, not an address
	if err := SameModuloAddresses("arm64", b, a); err == nil || !strings.Contains(err.Error(), "+0x14") {
		t.Errorf("nr_args change not found at +0x14: %v", err)
	}
}

func TestSplit(t *testing.T) {
	cs := make([]Case, 5)
	var sizes []int
	for _, s := range split(cs, 2) {
		sizes = append(sizes, len(s))
	}
	if len(sizes) != 2 || sizes[0] != 3 || sizes[1] != 2 {
		t.Errorf("split 5 in 2: %v", sizes)
	}
	if got := split(cs[:1], 4); len(got) != 1 {
		t.Errorf("1 case in 4 jobs: %d shares", len(got))
	}
}

func TestParseCases(t *testing.T) {
	lines := `# comment
{"id":"a","func":"bpf_fentry_test1","progs":[{"kind":"fentry","cookie":-1}]}

{"id":"b","func":"tj_args2","target":"bpf","run":true,"progs":[{"kind":"fexit","func_ip":true}]}
`
	cs, err := ParseCases(strings.NewReader(lines))
	if err != nil || len(cs) != 2 || uint64(cs[0].Progs[0].Cookie) != ^uint64(0) || cs[1].Target != "bpf" || !cs[1].Run {
		t.Fatalf("%+v %v", cs, err)
	}
	if cs, err := ParseCases(strings.NewReader(`[{"id":"a","func":"f","progs":[]}]`)); err != nil || len(cs) != 1 {
		t.Fatalf("array: %+v %v", cs, err)
	}
	for _, bad := range []string{
		`{"id":"a","func":"f","progs":[{"kind":"kprobe"}]}`,
		`{"id":"a","func":"f"}` + "\n" + `{"id":"a","func":"g"}`,
		`{"id":"a","func":"f","target":"module"}`,
		`{"id":"a","func":"f","typo":1}`,
	} {
		if _, err := ParseCases(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
