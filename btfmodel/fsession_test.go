package btfmodel

import (
	"strings"
	"testing"
)

// Fsession parses as a kind, and the 6.1/6.12 profiles, which predate BPF_TRACE_FSESSION,
// refuse it at load instead of treating it as an fentry.
func TestFsessionKind(t *testing.T) {
	at, err := ParseAttachType("fsession")
	if err != nil || at != Fsession {
		t.Fatalf("ParseAttachType(fsession) = %q, %v", at, err)
	}
	m := &FuncModel{Name: "bpf_fentry_test1"}
	for _, k := range []Kernel{Kernel61, Kernel612} {
		v := CheckAttach("bpf_fentry_test1", m, nil, Fsession, AttachEnv{Kernel: k, Arch: AMD64})
		if v.OK || v.Stage != StageLoad || v.Errno != "EINVAL" {
			t.Errorf("%s: fsession verdict %+v, want a load refusal", k, v)
		}
	}
}

// `trampjit model` reports fsession only for profiles that have it, after the four others.
func TestKernelAttachTypes(t *testing.T) {
	for k, want := range map[Kernel]string{
		Kernel61: "fentry fexit fmod_ret lsm", Kernel612: "fentry fexit fmod_ret lsm",
		Kernel72: "fentry fexit fmod_ret lsm fsession",
	} {
		var got []string
		for _, at := range k.AttachTypes() {
			got = append(got, string(at))
		}
		if s := strings.Join(got, " "); s != want {
			t.Errorf("%s: %s, want %s", k, s, want)
		}
	}
	if len(AttachTypes) != 4 {
		t.Errorf("Kernel72.AttachTypes changed AttachTypes: %v", AttachTypes)
	}
}

// A union by value (kill_pid_usb_asyncio's 8-byte sigval) distils like a struct of its size
// on 7.2, which attaches it (kill_pid_usb_asyncio-fentry); 6.12 refused it. A union return is
// refused on both (secure_tcp_seq_and_ts_off-fentry).
func TestUnionArgs(t *testing.T) {
	spec := corpusSpec(t, "7.2-amd64")
	fn, err := FuncByName(spec, "kill_pid_usb_asyncio")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Distill(fn, Kernel72)
	if err != nil {
		t.Fatal(err)
	}
	if a := m.Args[2]; a.Size != 8 || a.Flags&StructArg == 0 {
		t.Errorf("arg 2 %+v, want an 8-byte STRUCT_ARG", a)
	}
	if _, err := Distill(fn, Kernel612); err == nil || err.Error() != "The function kill_pid_usb_asyncio arg2 type UNION is unsupported." {
		t.Errorf("6.12: %v", err)
	}
	fn, err = FuncByName(spec, "secure_tcp_seq_and_ts_off")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Distill(fn, Kernel72); err == nil || err.Error() != "The function secure_tcp_seq_and_ts_off return type UNION is unsupported." {
		t.Errorf("7.2 union return: %v", err)
	}
}
