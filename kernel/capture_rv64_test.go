package kernel

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"os/exec"
	"slices"
	"testing"
	"time"

	"golang.org/x/arch/riscv64/riscv64asm"

	"github.com/trampjit/trampjit/jit"
)

// TestBootCaptureRISCV64 boots Debian's 7.2 riscv64 kernel once (OpenSBI, TCG), attaches
// fentry and fexit to bpf_fentry_test2 and to a BPF-program target, and checks what the
// kernel says independently of the agent's decoding: the CPU has Zbb, the programs are
// JITed (the sysctl the agent sets), the two ways of finding the image agree, the patch
// site is auipc t0; jalr t0 (decoded by golang.org/x/arch), the image ends in a return, and
// the programs saw bpf_fentry_test2(2, 3) return 5 (net/bpf/test_run.c).
func TestBootCaptureRISCV64(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-riscv64"); err != nil {
		t.Skip("qemu-system-riscv64 is not installed (qemu-system-misc); cannot boot the 7.2-riscv64 guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	fn := Case{ID: "bpf_fentry_test2-fentry-fexit", Func: "bpf_fentry_test2", Run: true,
		Progs: []jit.Prog{{Kind: jit.Fentry, Cookie: 7}, {Kind: jit.Fexit, FuncIP: true}}}
	prog := Case{ID: "bpf-tj_args2-fentry-fexit", Func: "tj_args2", Target: "bpf", Run: true,
		Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}}
	rep, err := Capture(ctx, CaptureOptions{Kernel: "7.2", Arch: "riscv64", Cases: []Case{fn, prog},
		Timeout: 6 * time.Minute, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%s), boot %v", rep.Kernel.Release, rep.Kernel.Version, rep.Boots[0].BootTime)
	if rep.Info == nil || !slices.Contains(rep.Info.CPUFlags, "zbb") {
		t.Errorf("the guest's isa string lacks zbb: %v", rep.Info)
	}
	for i, c := range rep.Cases {
		r := rep.Results[c.ID]
		if c.Error != "" {
			t.Fatalf("%s: refused at %s: %s", c.ID, c.Stage, c.Error)
		}
		if !slices.Contains(r.Checks, "trampoline_table walk agrees on the image") {
			t.Errorf("%s: located by %q; the walk did not confirm it: %v", c.ID, r.Locate, r.Checks)
		}
		for j, p := range r.Progs {
			if p.BPFFunc == 0 {
				t.Errorf("%s: program %d has no JITed address (bpf_jit_enable off?)", c.ID, j+1)
			}
		}
		site := r.Site[r.IP-r.Addr:]
		a, err1 := riscv64asm.Decode(site)
		j, err2 := riscv64asm.Decode(site[4:])
		if err1 != nil || err2 != nil || a.Op != riscv64asm.AUIPC || j.Op != riscv64asm.JALR ||
			a.Args[0] != map[int]riscv64asm.Reg{0: riscv64asm.X5, 1: riscv64asm.X6}[i] || j.Args[0] != riscv64asm.X5 {
			t.Errorf("%s: patch site % x: %v; %v (%v %v), want auipc %s; jalr t0", c.ID, site[:8], a, j, err1, err2,
				map[int]string{0: "t0 (ftrace)", 1: "t1 (bpf_arch_text_poke)"}[i])
		}
		img, err := hex.DecodeString(c.Image)
		if err != nil || len(img) < 2 {
			t.Fatalf("%s: image %q: %v", c.ID, c.Image, err)
		}
		if last := binary.LittleEndian.Uint16(img[len(img)-2:]); last != 0x8082 && last != 0x8282 {
			t.Errorf("%s: image ends in %#04x, want c.jr ra / c.jr t0", c.ID, last)
		}
		t.Logf("%s: %s; site % x at %#x, image %#x; %d bytes", c.ID, r.Locate, r.Site[:16], r.Addr, r.Image, len(img))
	}
	// test_run.c calls bpf_fentry_test2(2, 3) and answers 0 when it returned 5; bpf_get_func_ip
	// is the function's address (the trampoline stores func_addr, the entry).
	run := rep.Cases[0].Run
	if run == nil || run.Ret != 0 || len(run.Progs) != 2 || !slices.Equal(run.Progs[0].Ctx, []uint64{2, 3}) ||
		run.Progs[1].Ret == nil || *run.Progs[1].Ret != 5 || run.Progs[1].IP != rep.Results[fn.ID].Addr {
		t.Errorf("bpf_fentry_test2(2, 3) under the trampoline: %+v, want ctx [2 3], fexit ret 5, ip %#x", run, rep.Results[fn.ID].Addr)
	}
}
