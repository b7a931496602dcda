package verifier_test

import (
	"encoding/json"
	"testing"

	"github.com/trampjit/trampjit/verifier"
)

// Programs that pin 7.2 behaviours the ground truth touches only once or not at all: the
// differential run's finds (make verifier-fuzz FUZZPROFILE=7.2-amd64, seed 1: g1, g137,
// g1028, g2685) and probes of rdonly_untrusted_mem. Each answer is what Debian's 7.2.13
// amd64 kernel said (trampjit verify --against-kernel), not the model's.
var kernel72Cases = []struct {
	name, section string
	insns         []string
	accepted      bool
	last          string // the kernel's last line, rejected programs only
}{
	{"g1_ptr_offset", "lsm/bprm_check_security", []string{"r6 = r1", "r9 = *(u64 *)(r6 +8)", "r9 = *(u64 *)(r6 +0)",
		"r8 = *(u32 *)(r6 +8)", "r7 = *(u64 *)(r6 +0)", "r7 -= r8", "r8 = *(u64 *)(r9 +120)", "r7 = *(u64 *)(r6 +0)",
		"r8 = *(u64 *)(r6 +0)", "r9 += 8", "r1 = r6", "call bpf_get_attach_cookie", "r0 = 0", "exit"},
		false, "trusted_ptr_ pointer offset -4294967295 is not allowed"},
	{"g137_mixed_bounds", "fentry/bpf_fentry_test3", []string{"r6 = r1", "r2 = *(u64 *)(r6 +0)", "r2 &= 7", "r1 = r6",
		"r3 = r10", "r3 += -8", "call bpf_get_func_arg", "r8 = *(u64 *)(r6 +16)", "if w0 < 0x1 goto pc+1", "r0 = 0", "exit"},
		false, "At program exit the register R0 has unknown scalar value should have been in [0, 0]"},
	{"g1028_untrusted_mem_and", "fentry/tcp_v4_connect", []string{"r7 = 6", "*(u32 *)(r10 -8) = r7", "r9 = *(u64 *)(r10 -8)",
		"r8 = *(u64 *)(r1 +0)", "r2 = r9", "r2 &= 15", "r1 = r10", "r1 += -16", "r3 = 0", "call bpf_probe_read_kernel",
		"r7 = *(u64 *)(r8 +776)", "if r0 > r9 goto pc+1", "if r8 == 0x0 goto pc+3", "r9 = *(u64 *)(r8 +648)", "r7 &= 7",
		"r8 += r7", "r0 = -1", "exit"},
		false, "R8 pointer += pointer prohibited"},
	{"g2685_untrusted_mem_maybe_null", "fexit/tcp_v4_connect", []string{"r6 = r1", "r7 = *(u64 *)(r6 +0)",
		"call bpf_get_current_pid_tgid", "r7 = *(u64 *)(r7 +680)", "r7 <<= 0", "*(u64 *)(r10 -24) = 1", "r8 = *(u64 *)(r6 +8)",
		"if r7 != 0x0 goto pc+2", "if w8 == 0x0 goto pc+1", "if r7 < 0x1 goto pc+1", "r0 = 1", "exit"},
		false, "At program exit the register R0 has smin=1 smax=1 should have been in [0, 0]"},
	{"k_void_mem_add", "fexit/vfs_read", []string{"r7 = *(u64 *)(r1 +0)", "r2 = *(u64 *)(r7 +24)", "r3 = *(u64 *)(r2 +0)",
		"r2 += 8", "r0 = r2", "r0 = 0", "exit"}, true, ""},
	{"k_void_mem_write", "fexit/vfs_read", []string{"r7 = *(u64 *)(r1 +0)", "r2 = *(u64 *)(r7 +24)", "*(u64 *)(r2 +0) = 0",
		"r0 = 0", "exit"}, false, "R2 cannot write into rdonly_untrusted_mem"},
	{"k_char_mem_neg", "lsm/bprm_check_security", []string{"r7 = *(u64 *)(r1 +0)", "r2 = *(u64 *)(r7 +112)",
		"r3 = *(u8 *)(r2 -8)", "r0 = 0", "exit"}, true, ""},
	{"k_char_mem_far", "lsm/bprm_check_security", []string{"r7 = *(u64 *)(r1 +0)", "r2 = *(u64 *)(r7 +112)",
		"r3 = *(u64 *)(r2 +4000)", "r0 = 0", "exit"}, true, ""},
	{"k_char_mem_helper", "lsm/bprm_check_security", []string{"r7 = *(u64 *)(r1 +0)", "r3 = *(u64 *)(r7 +112)", "r1 = r10",
		"r1 += -8", "r2 = 8", "call bpf_probe_read_kernel", "r0 = 0", "exit"}, true, ""},
	{"k_char_mem_null", "lsm/bprm_check_security", []string{"r7 = *(u64 *)(r1 +0)", "r2 = *(u64 *)(r7 +112)",
		"if r2 == 0x0 goto l", "r3 = *(u8 *)(r2 +0)", "l:", "r0 = 0", "exit"}, true, ""},
}

func TestKernel72Cases(t *testing.T) {
	env := profileEnv(t, "7.2-amd64")
	for _, tc := range kernel72Cases {
		t.Run(tc.name, func(t *testing.T) {
			src, _ := json.Marshal(map[string]any{"programs": []any{map[string]any{
				"name": tc.name, "section": tc.section, "license": "GPL", "insns": tc.insns}}})
			progs, err := verifier.ParseJSON(src)
			if err != nil {
				t.Fatal(err)
			}
			got := verifier.Check(progs[0], env)
			if got.Accepted != tc.accepted || (!tc.accepted && got.Error != tc.last) {
				t.Errorf("kernel: accepted=%v %q; model: accepted=%v %q", tc.accepted, tc.last, got.Accepted, got.Error)
			}
		})
	}
}
