package jit

import "github.com/trampjit/trampjit/btfmodel"

// Synthetic is the fixed address layout used when a request has no addrs, so that images are
// reproducible. It imitates a kernel's: the traced function and the helpers in kernel text,
// the image and the programs' JITed code together in the BPF/module area (so that arm64 reaches
// programs with bl and helpers with blr, as on a real kernel), struct bpf_prog in vmalloc
// space and struct bpf_tramp_image in the linear map.
//
//	             amd64                 arm64                 riscv64 (Sv48, as captured)
//	image        0xffffffffc0000000    0xffff800080000000    0xffffffff78000000
//	bpf_func #i  0xffffffffc0001000+   0xffff800080001000+   0xffffffff78001000+   (i-1)*0x100
//	prog #i      0xffffc90000010000+   0xffff800082010000+   0xffff8f8000010000+   (i-1)*0x1000
//	im           0xffff888100000000    0xfff0000001234400    0xffffaf8001234400
//	func         0xffffffff81200000    0xffffa00080200000    0xffffffff80200000    (ip: the patch site)
//	helpers      0xffffffff81100000+   0xffffa00080100000+   0xffffffff80100000+   0x40 apart, in SyntheticHelpers order
//
// riscv64's BPF region is the 128 MiB below the kernel image, so programs are in jal reach
// of the image and helpers only in auipc+jalr reach, as on a Debian kernel.
func Synthetic(arch btfmodel.Arch, k btfmodel.Kernel, nprogs int) *Addrs {
	type base struct{ image, bpfFunc, prog, im, fn, helpers uint64 }
	b := base{0xffffffffc0000000, 0xffffffffc0001000, 0xffffc90000010000, 0xffff888100000000, 0xffffffff81200000, 0xffffffff81100000}
	ip := b.fn // 6.1 x86: the call is the first instruction
	if arch == btfmodel.ARM64 {
		b = base{0xffff800080000000, 0xffff800080001000, 0xffff800082010000, 0xfff0000001234400, 0xffffa00080200000, 0xffffa00080100000}
		ip = b.fn + 4 // mov x9, x30; bl <trampoline>
	} else if arch == btfmodel.RISCV64 {
		b = base{0xffffffff78000000, 0xffffffff78001000, 0xffff8f8000010000, 0xffffaf8001234400, 0xffffffff80200000, 0xffffffff80100000}
		ip = b.fn // the patch site is the function's first two instructions
	} else if k.Has(btfmodel.CapX86KernelIBT) {
		ip = b.fn + 4 // endbr64 (IBT builds), then the call
	}
	a := &Addrs{Image: Addr(b.image), Func: Addr(b.fn), IP: Addr(ip), IM: Addr(b.im), Helpers: map[string]Addr{}}
	for i := 0; i < nprogs; i++ {
		a.Progs = append(a.Progs, ProgAddrs{Prog: Addr(b.prog + uint64(i)*0x1000), BPFFunc: Addr(b.bpfFunc + uint64(i)*0x100)})
	}
	for i, name := range SyntheticHelpers {
		a.Helpers[name] = Addr(b.helpers + uint64(i)*0x40)
	}
	return a
}

// SyntheticHelpers are the kernel symbols the synthetic layout provides, in address order.
var SyntheticHelpers = []string{
	HelperTrampEnter, HelperTrampExit,
	"__bpf_prog_enter", "__bpf_prog_exit",
	"__bpf_prog_enter_recur", "__bpf_prog_exit_recur",
	"__bpf_prog_enter_sleepable", "__bpf_prog_exit_sleepable",
	"__bpf_prog_enter_sleepable_recur", "__bpf_prog_exit_sleepable_recur",
	"__bpf_prog_enter_lsm_cgroup", "__bpf_prog_exit_lsm_cgroup",
	"__x86_return_thunk", "__x86_indirect_thunk_rbx", "__x86_call_depth",
}
