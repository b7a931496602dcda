package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func trampjit(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

const btf612 = "../../testdata/btf/vmlinux-6.12-amd64.btf.xz"

func TestModelProtoStruct(t *testing.T) {
	code, out, errOut := trampjit("model", "--proto", "struct pair { u64 a; u32 b; }; int f(struct pair p, int x)",
		"--kernel", "6.12", "--arch", "amd64", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m modelJSON
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	// struct pair is 16 bytes (8 + 4, padded to 8): two slots, then x in the third.
	if len(m.Args) != 2 || m.Args[0].Size != 16 || m.Args[0].Slots != 2 || m.Args[0].Flags[0] != "STRUCT_ARG" || m.NrRegs != 3 {
		t.Errorf("model = %+v", m)
	}
	code, out, _ = trampjit("model", "--proto", "struct pair { u64 a; u32 b; }; int f(struct pair p, int x)", "--color", "never")
	if code != 0 || !strings.Contains(out, "2 (ctx[0..1])") || !strings.Contains(out, "1 (ctx[2])") {
		t.Errorf("text model (exit %d):\n%s", code, out)
	}
}

func TestModelBTF(t *testing.T) {
	code, out, errOut := trampjit("model", "--btf", btf612, "--func", "tcp_v4_connect", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m modelJSON
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if m.Prototype != "int tcp_v4_connect(struct sock *sk, struct sockaddr *uaddr, int addr_len)" || m.BTFID == 0 {
		t.Errorf("model = %+v", m)
	}
	verdicts := map[string]bool{}
	for _, v := range m.Attach {
		verdicts[string(v.Type)] = v.OK
	}
	if !verdicts["fentry"] || !verdicts["fexit"] || verdicts["fmod_ret"] || verdicts["lsm"] {
		t.Errorf("verdicts = %v", verdicts)
	}
}

func TestModelErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"model", "--btf", btf612, "--func", "no_such_function_here"}, 1, "function no_such_function_here not found in BTF"},
		{[]string{"model", "--btf", "/nonexistent/vmlinux", "--func", "f"}, 1, "no such file or directory"},
		{[]string{"model", "--btf", "main.go", "--func", "f"}, 1, "not BTF"},
		{[]string{"model", "--btf", btf612, "--func", "bpf_trace_run12"}, 1, "The function bpf_trace_run12 has 13 arguments. Too many."},
		{[]string{"model", "--proto", "struct big { u64 a[3]; }; int f(struct big b)"}, 1, "The function f arg0 type STRUCT is unsupported."},
		{[]string{"model", "--proto", "int f(in a)"}, 1, "--proto: line 1, column 7: unknown type name 'in'"},
		{[]string{"model", "--proto", "int f(void)", "--kernel", "5.15"}, 2, "unknown kernel profile"},
		{[]string{"model", "--proto", "int f(void)", "--arch", "riscv"}, 2, "unknown architecture"},
		{[]string{"model", "--proto", "int f(void)", "--format", "yaml"}, 2, "unknown --format"},
		{[]string{"model"}, 2, "need --func NAME"},
		{[]string{"model", "--proto", "int f(void)", "--btf", btf612}, 2, "either --proto or --btf"},
		{[]string{"run", "--proto", "int f(void)", "--fentry", "1", "--engine", "native", "--trace"}, 2, "--trace is unicorn's"},
		{[]string{"run", "--proto", "int f(void)", "--fentry", "1", "--arch", "arm64", "--engine", "native"}, 1, "the native engine runs x86_64 images only"},
		{[]string{"run", "--corpus", "../../testdata/kernel/6.12-amd64", "--case", "bpf_fentry_test2-fentry-fexit", "--engine", "native"}, 1, "needs user-space addresses"},
		{[]string{"run", "--proto", "int f(int a)", "--fentry", "1", "--args", "x"}, 2, `--args: "x" is not a 64-bit integer`},
		{[]string{"run", "--corpus", "../../testdata/kernel/6.12-amd64", "--case", "do_exit-fexit"}, 1, "has no image: the kernel refused it"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	} {
		code, _, errOut := trampjit(c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("trampjit %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.msg)
		}
	}
}

func TestModelJSONOnRejection(t *testing.T) {
	code, out, _ := trampjit("model", "--btf", btf612, "--func", "_printk", "--format", "json")
	var m modelJSON
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("exit %d, output not JSON: %v\n%s", code, err, out)
	}
	if code != 1 || m.Error != "The function _printk with variable args is unsupported." || len(m.Attach) != 4 || m.Attach[0].OK {
		t.Errorf("exit %d, %+v", code, m)
	}
}

// The expected verdicts are the kernel's rules in its words: ctx access (btf_ctx_access,
// kernel/bpf/btf.c) and return codes (check_return_code, kernel/bpf/verifier.c).
func TestVerifyELF(t *testing.T) {
	code, out, errOut := trampjit("verify", "testdata/verify.bpf.o", "--btf", btf612, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res verifyJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ok_prog":  "",
		"ret_slot": "",
		"bad_arg":  "invalid bpf_context access off=24 size=8",
		"bad_ret":  "At program exit the register R0 has smin=1 smax=1 should have been in [0, 0]",
	}
	for _, p := range res.Programs {
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("unexpected program %s", p.Name)
			continue
		}
		if p.Accepted != (w == "") || p.Error != w {
			t.Errorf("%s: accepted=%v error %q, want %q", p.Name, p.Accepted, p.Error, w)
		}
		delete(want, p.Name)
	}
	if len(want) > 0 {
		t.Errorf("programs not reported: %v", want)
	}
	code, out, _ = trampjit("verify", "--btf", btf612, "testdata/verify.bpf.o", "--color", "never")
	if code != 0 || !strings.Contains(out, "r1 = *(u16 *)(r1 +16) -> sk->__sk_common.skc_family") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
}

// fmod_ret semantics (invoke_bpf_mod_ret, arch/x86/net/bpf_jit_comp.c): a non-zero return
// skips the original and becomes the return value; fexit still runs and sees it in its
// return slot.
func TestRunFmodRet(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		code, out, errOut := trampjit("run", "--proto", "int f(int a, u64 b)", "--arch", arch,
			"--fentry", "1", "--fmod-ret", "1", "--fexit", "1", "--args", "5,6", "--ret-values", "7", "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s %s", arch, code, errOut, out)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"ok", "engine", "args", "ret", "original_called", "programs", "checks", "hits", "hits_per_sec"} {
			if _, ok := rep[k]; !ok {
				t.Errorf("%s: JSON contract lacks %q", arch, k)
			}
		}
		if rep["ok"] != true || rep["ret"] != float64(7) || rep["original_called"] != false {
			t.Errorf("%s: ok=%v ret=%v original_called=%v", arch, rep["ok"], rep["ret"], rep["original_called"])
		}
		progs := rep["programs"].([]any)
		fexit := progs[1].(map[string]any)
		if ctx := fexit["ctx"].([]any); fexit["kind"] != "fexit" || len(ctx) != 3 || ctx[2] != float64(7) {
			t.Errorf("%s: fexit saw %v", arch, fexit)
		}
	}
	// The kernel's own image of a corpus case runs at its kernel addresses.
	code, out, errOut := trampjit("run", "--corpus", "../../testdata/kernel/6.12-arm64", "--case", "bpf_fentry_test2-fentry-fexit", "--count", "100")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("corpus case: exit %d\n%s%s", code, out, errOut)
	}
}
