package arm64_test

import (
	"path/filepath"
	"testing"

	"github.com/trampjit/trampjit/kernel"
)

// corpus72 is the Debian 7.2.13 arm64 capture (docs/kernel-7.2-captured.md).
const corpus72 = "../testdata/kernel/7.2-arm64"

// Each 7.2 difference from 6.12, with the captured cases that show it: the generated image must
// be the kernel's byte for byte, a refusal the kernel's.
var findings72 = []struct {
	name string
	ids  []string
}{
	{"count stored with movz w10 (store_func_meta)", []string{"bpf_fentry_test2-fentry-fexit", "bpf_fentry_test1-fentry"}},
	{"register moves are orr, sp moves add #0", []string{"bpf_fentry_test2-fentry-fexit", "bpf_fentry_test2-fentry"}},
	{"a skip NOP per program block, none after the original call", []string{"bpf_fentry_test2-fexit3", "bpf_modify_return_test-fmod_ret-fexit", "bpf_fentry_test6-fentry2-fexit2"}},
	{"9 to 12 arguments: stack arguments copied and masked", []string{"__bpf_sk_lookup-fexit", "__bpf_sk_lookup-fentry", "__ip_append_data-fexit-cookies", "tcp_v4_send_ack-fentry2-fexit2", "tcp_v4_send_ack-fentry-fexit-func-ip"}},
	{"structs on the stack", []string{"aa_audit_file-fexit", "aa_audit_file-fentry", "bpf_log_attr_init-fentry-fexit-func-ip"}},
	{"37 links fit, the 38th is E2BIG", []string{"bpf_fentry_test2-links-37-fentry", "bpf_fentry_test2-links-38-fentry"}},
	{"35 fmod_ret + 1 fexit is more than a page", []string{"bpf_modify_return_test-links-36-fmod_ret"}},
	{"more than 12 arguments refused at load", []string{"bpf_trace_run12-fentry"}},
	{"fsession: cookie slots and retval zeroed through one x10, func_meta with the cookie index", []string{"bpf_fentry_test2-fsession-cookie", "bpf_fentry_test2-fsession4-cookie3", "bpf_fentry_test2-fsession-cookie-nocookie", "bpf_fentry_test2-fsession-cookie-func-ip", "bpf_fentry_test2-fsession-bpf-cookie"}},
	{"fsession: is_return stored where the fmod_ret cbnz lands", []string{"bpf_modify_return_test-fsession-cookie-fmod_ret-fexit", "bpf_modify_return_test-fentry-fmod_ret-fsession2"}},
	{"fsession with stack arguments, LSM and plain programs", []string{"__bpf_sk_lookup-fsession-cookie", "tcp_v4_send_ack-fsession-fentry-fexit", "bpf_lsm_file_open-lsm-fsession", "bpf_fentry_test2-fsession"}},
	{"fsession takes two links: 18 attach, the 19th is E2BIG", []string{"bpf_fentry_test2-links-18-fsession", "bpf_fentry_test2-links-19-fsession"}},
}

func TestCorpus72Findings(t *testing.T) {
	cases, err := kernel.ReadCorpus(filepath.Clean(corpus72))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*kernel.CorpusCase{}
	for i := range cases {
		byID[cases[i].ID] = &cases[i]
	}
	for _, f := range findings72 {
		t.Run(f.name, func(t *testing.T) {
			for _, id := range f.ids {
				c := byID[id]
				if c == nil {
					t.Fatalf("%s is not in %s", id, corpus72)
				}
				if d := kernel.Diff(c); d.Verdict != kernel.Match {
					t.Errorf("%s: %s at %#x: model %s, kernel %s %s", id, d.Verdict, d.Offset, d.Model, d.Kernel, d.Note)
				}
			}
		})
	}
}

// bpf_trace_run11 is not ftrace-managed: the kernel falls back to bpf_arch_text_poke, which on
// arm64 patches only BPF text and answers -ENOTSUPP (x86_64: EBUSY). BTF does not say which
// functions ftrace manages, so the diff counts it as a refusal the model cannot predict
// rather than as a model that accepts what the kernel refused.
func TestCorpus72NotFtraceManaged(t *testing.T) {
	cases, err := kernel.ReadCorpus(corpus72)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		if c := &cases[i]; c.ID == "bpf_trace_run11-fentry" {
			if c.Errno != "ENOTSUPP" || c.Stage != "attach" {
				t.Fatalf("%s: %s at %s, want ENOTSUPP at attach", c.ID, c.Errno, c.Stage)
			}
			if d := kernel.Diff(c); d.Verdict != kernel.Unmodelled {
				t.Errorf("%s: %s (%s), want %s", c.ID, d.Verdict, d.Note, kernel.Unmodelled)
			}
			return
		}
	}
	t.Fatal("bpf_trace_run11-fentry is not in the corpus")
}

// TestCorpus72CallOps: on 7.2 every kernel-function trampoline is ops->direct_call (CALL_OPS:
// the ftrace_ops pointer sits in the 8 bytes before the function) and the patch site branches
// to ftrace_caller, which enters the image with x9 = the parent's LR and x30 = the function
// body, as 6.12's out-of-range site did; BPF-program targets branch to the image directly.
// The generator's frames assume exactly that entry.
func TestCorpus72CallOps(t *testing.T) {
	cases, err := kernel.ReadCorpus(corpus72)
	if err != nil {
		t.Fatal(err)
	}
	kfunc := 0
	for i := range cases {
		c := &cases[i]
		if c.Image == "" || c.Request.Target == "bpf" || c.Request.StructOps != nil {
			continue // struct_ops images are entered through the ops table, not a patch site
		}
		kfunc++
		viaOps := c.Locate == "arm64 ftrace_ops.direct_call via the ops pointer before the function"
		if !viaOps || !contains(c.Checks, "bl at the patch site targets ftrace_caller") || !contains(c.Checks, "trampoline_table walk agrees on the image") {
			t.Errorf("%s: located %q, checks %q", c.ID, c.Locate, c.Checks)
		}
	}
	if kfunc < 200 {
		t.Errorf("only %d kernel-function images", kfunc)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
