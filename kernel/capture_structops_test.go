package kernel

import (
	"context"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"github.com/trampjit/trampjit/jit"
)

// TestBootCaptureStructOps boots Debian's 6.12 amd64 kernel and registers one
// tcp_congestion_ops implementing every member: each image must be found both by its
// bpf__tcp_congestion_ops_<member> ksym and by the registered table's pointer, get_info must be
// refused with the kernel's words, and the images must lie back to back in member order.
func TestBootCaptureStructOps(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed; cannot boot the 6.12-amd64 guest")
	}
	var cases []Case
	for _, c := range StructOpsCatalog("6.12", "amd64") {
		if strings.HasPrefix(c.ID, "struct_ops-tcp_congestion_ops-") {
			cases = append(cases, c)
		}
	}
	if len(cases) != 13 {
		t.Fatalf("%d tcp_congestion_ops cases in the 6.12 catalogue, want 13", len(cases))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	rep, err := Capture(ctx, CaptureOptions{Kernel: "6.12", Arch: "amd64", Cases: cases, Timeout: 150 * time.Second, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d cases in %v", rep.Kernel.Release, len(rep.Cases), time.Since(t0))
	var prevEnd, prevImage uint64
	images := 0
	for _, c := range rep.Cases {
		member := c.Request.StructOps.Member
		if member == "get_info" {
			if c.Stage != "load" || c.Errno != "ENOTSUPP" || !strings.Contains(c.Log, "attach to unsupported member get_info of struct tcp_congestion_ops") {
				t.Errorf("get_info: %s %s %q, log %q; want refused at load, ENOTSUPP, with the kernel's words", c.Stage, c.Errno, c.Error, c.Log)
			}
			continue
		}
		if c.Error != "" {
			t.Errorf("%s: %s: %s", c.ID, c.Stage, c.Error)
			continue
		}
		images++
		so := c.StructOps
		img := uint64(c.Request.Addrs.Image)
		if so == nil || so.Mode != "reg" || uint64(so.KsymAt) != img || uint64(so.Ptr) != img {
			t.Errorf("%s: image %#x not found both ways: %+v", c.ID, img, so)
		}
		if so != nil && so.Ksym != "bpf__tcp_congestion_ops_"+member {
			t.Errorf("%s: ksym %q", c.ID, so.Ksym)
		}
		code, err := hex.DecodeString(c.Image)
		if err != nil || len(code) < 8 {
			t.Fatalf("%s: image %q: %v", c.ID, c.Image, err)
		}
		// The code ends at its return: the last instruction decodes to ret (+ int3) or jmp.
		if last := code[len(code)-1]; last != 0xcc && last != 0xc3 {
			if in, err := x86asm.Decode(code[len(code)-5:], 64); err != nil || in.Op != x86asm.JMP {
				t.Errorf("%s: image does not end at a return: % x", c.ID, code[len(code)-8:])
			}
		}
		// Back to back, in member order: each image after the previous one's code, with no
		// more than the JIT's safety margin between them.
		if prevImage != 0 && (img < prevEnd || img > prevEnd+128) {
			t.Errorf("%s: image at %#x, the previous one's code ends at %#x", c.ID, img, prevEnd)
		}
		prevImage, prevEnd = img, img+uint64(len(code))
		if len(c.Request.Addrs.Progs) != 1 || c.Request.Addrs.Progs[0].Prog == 0 || c.Request.Addrs.Progs[0].BPFFunc == 0 {
			t.Errorf("%s: program addresses %+v", c.ID, c.Request.Addrs.Progs)
		}
		if c.Request.Progs[0].Kind != jit.StructOpsProg {
			t.Errorf("%s: program kind %q", c.ID, c.Request.Progs[0].Kind)
		}
	}
	if images != 12 {
		t.Errorf("%d images, want 12 (13 members, get_info refused)", images)
	}
}
