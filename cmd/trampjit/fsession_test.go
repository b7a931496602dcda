package main

import (
	"strings"
	"testing"
)

const btf72 = "../../testdata/kernel/7.2-amd64/vmlinux.btf.xz"

// fsession from the command line: on 7.2 the run's session check passes (the kernel's
// semantics, from the oracle); on 6.12, which has no BPF_TRACE_FSESSION, the model refuses
// it as the kernel's attach-type check does; cookie counts beyond the fsession programs are
// usage errors.
func TestFsessionFlags(t *testing.T) {
	code, out, e := trampjit("run", "--btf", btf72, "--func", "bpf_fentry_test2", "--kernel", "7.2",
		"--fsession", "2", "--session-cookie", "1", "--fexit", "1", "--args", "1,2", "--color", "never")
	if code != 0 || !strings.Contains(out, "session       ok    2 fsession program(s)") || !strings.Contains(out, "1 session cookie(s)") {
		t.Errorf("run --fsession 2 on 7.2: exit %d\n%s%s", code, out, e)
	}
	code, _, e = trampjit("gen", "--btf", btf612, "--func", "bpf_fentry_test2", "--kernel", "6.12", "--fsession", "1")
	if code != 1 || !strings.Contains(e, "fsession") {
		t.Errorf("gen --fsession on 6.12: exit %d, %q", code, e)
	}
	code, _, e = trampjit("gen", "--proto", "int f(int a)", "--kernel", "7.2", "--fsession", "1", "--session-cookie", "2")
	if code != 2 || !strings.Contains(e, "--session-cookie 2") {
		t.Errorf("--session-cookie 2 with one fsession: exit %d, %q", code, e)
	}
}
