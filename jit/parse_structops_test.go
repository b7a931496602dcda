package jit

import (
	"strings"
	"testing"
)

const soBase = `"arch":"amd64","kernel":"7.2","btf":"../testdata/kernel/7.2-amd64/vmlinux.btf.xz"`

func TestStructOpsRequestErrors(t *testing.T) {
	so := `"struct_ops":{"ops":"tcp_congestion_ops","member":"cong_avoid"}`
	one := `"progs":[{"kind":"struct_ops"}]`
	for _, c := range []struct{ doc, want string }{
		{`{` + soBase + `,"struct_ops":{"member":"cong_avoid"},` + one + `}`, "struct_ops.ops: missing"},
		{`{` + soBase + `,"struct_ops":{"ops":"tcp_congestion_ops"},` + one + `}`, "struct_ops.member: missing"},
		{`{` + soBase + `,` + so + `,"func":"tcp_reno_cong_avoid",` + one + `}`, "func: a struct_ops request has no traced function"},
		{`{"arch":"amd64","kernel":"7.2","proto":"void f(void *sk)",` + so + `,` + one + `}`, "proto: a struct_ops request"},
		{`{` + soBase + `,` + so + `,"target":"bpf",` + one + `}`, "target: a struct_ops request has no target"},
		{`{"arch":"amd64","kernel":"7.2",` + so + `,` + one + `}`, "btf: a struct_ops request needs"},
		{`{` + soBase + `,` + so + `,"progs":[]}`, "exactly one program, not 0"},
		{`{` + soBase + `,` + so + `,"progs":[{"kind":"struct_ops"},{"kind":"struct_ops"}]}`, "exactly one program, not 2"},
		{`{` + soBase + `,` + so + `,"progs":[{"kind":"fentry"}]}`, `progs[0].kind: "fentry", want struct_ops`},
		{`{` + soBase + `,` + so + `,"progs":[{"kind":"struct_ops","cookie":1}]}`, "cookie, func_ip and session_cookie are for tracing"},
		{`{` + soBase + `,` + so + `,` + one + `,"addrs":{"func":"0x20","progs":[{"prog":"0x1","bpf_func":"0x2"}]}}`, "addrs.image: missing"},
		{`{` + soBase + `,` + so + `,` + one + `,"addrs":{"image":"0x10","func":"0x20","progs":[{"prog":"0x1","bpf_func":"0x2"}]}}`, "addrs.func: a struct_ops image calls no original"},
		{`{` + soBase + `,` + so + `,` + one + `,"addrs":{"image":"0x10","ip":"0x20","progs":[{"prog":"0x1","bpf_func":"0x2"}]}}`, "addrs.ip"},
		{`{` + soBase + `,` + so + `,` + one + `,"addrs":{"image":"0x10","im":"0x20","progs":[{"prog":"0x1","bpf_func":"0x2"}]}}`, "addrs.im"},
		{`{` + soBase + `,` + so + `,` + one + `,"addrs":{"image":"0x10","progs":[]}}`, "addrs.progs has 0 entries for 1 prog"},
		// A struct_ops program outside a struct_ops request has no member to implement.
		{`{"arch":"amd64","kernel":"6.12","proto":"int f(int a)","progs":[{"kind":"struct_ops"}]}`, "progs[0]: kind struct_ops needs a struct_ops object"},
	} {
		_, err := ParseRequest(strings.NewReader(c.doc), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n  got %v\n  want %q", c.doc, err, c.want)
		}
	}
}

func TestStructOpsRequest(t *testing.T) {
	doc := `{` + soBase + `,"struct_ops":{"ops":"tcp_congestion_ops","member":"ssthresh"},"progs":[{"kind":"struct_ops"}],` +
		`"addrs":{"image":"0xffffffffc0001000","progs":[{"prog":"0xffffc90000010000","bpf_func":"0xffffffffc0002000"}],"helpers":{"__bpf_prog_enter":"0xffffffff81000000"}}}`
	req, err := ParseRequest(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	req.SetDir(".")
	so, err := req.StructOpsMember()
	if err != nil {
		t.Fatal(err)
	}
	// include/net/tcp.h (7.2): cong_avoid, cong_control, ssthresh, ...; u32 (*ssthresh)(struct sock *sk).
	if so.Index != 2 || so.Model.RetSize != 4 || Flags(so.Flags) != FlagIndirect|FlagRetFentryRet {
		t.Errorf("ssthresh: index %d ret %d flags %s", so.Index, so.Model.RetSize, Flags(so.Flags))
	}
	// A refused member's model is the kernel's refusal.
	req.StructOps.Member = "get_info"
	if _, err := req.Model(); err == nil || !strings.Contains(err.Error(), "attach to unsupported member get_info of struct tcp_congestion_ops (load, ENOTSUPP)") {
		t.Errorf("get_info: %v", err)
	}
}
