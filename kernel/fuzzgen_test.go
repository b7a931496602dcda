package kernel

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

func fuzzPool(t *testing.T, kernel, arch string) *FuzzPool {
	t.Helper()
	spec, err := btfmodel.LoadFile(filepath.Join("..", "testdata", "kernel", kernel+"-"+arch, "vmlinux.btf.xz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewFuzzPool(spec, btfmodel.Kernel(kernel), btfmodel.Arch(arch))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// modelAttaches asks the model whether a generated case attaches.
func modelAttaches(kernel, arch string, c Case) error {
	req := &jit.Request{Arch: btfmodel.Arch(arch), Kernel: btfmodel.Kernel(kernel), Func: c.Func, Progs: c.Progs,
		BTF: filepath.Join("..", "testdata", "kernel", kernel+"-"+arch, "vmlinux.btf.xz")}
	if c.Target == "bpf" {
		req.BTF, req.Func, req.Target, req.Proto = "", "", "bpf", targetProto(c.Func)
	}
	_, _, err := jit.Generate(req)
	return err
}

func TestFuzzGenerateReproducible(t *testing.T) {
	p := fuzzPool(t, "6.12", "amd64")
	a, b := p.Generate(7, 200), p.Generate(7, 200)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed drew different cases")
	}
	if reflect.DeepEqual(a, p.Generate(8, 200)) {
		t.Fatal("seeds 7 and 8 drew the same cases")
	}
	if err := validateCases(a); err != nil {
		t.Fatalf("generated cases the capture path refuses: %v", err)
	}
}

// TestFuzzGenerateCoverage: 2000 draws span what the issue lists, and most attach (by the
// model; the campaign checks the kernel agrees) while some are refused on purpose.
func TestFuzzGenerateCoverage(t *testing.T) {
	for _, pa := range [][2]string{{"6.12", "amd64"}, {"7.2", "arm64"}, {"6.12", "riscv64"}} {
		kernel, arch := pa[0], pa[1]
		t.Run(kernel+"-"+arch, func(t *testing.T) {
			p := fuzzPool(t, kernel, arch)
			all, unc := p.Shapes()
			cases := p.Generate(1, 2000)
			nargs := map[int]bool{}
			cookies := map[string]bool{}
			seen := map[string]int{}
			ok, refused, uncovered := 0, 0, 0
			for _, c := range cases {
				if m := p.Model(c.Func); m != nil && c.Target == "" {
					nargs[m.NrArgs()] = true
					if !p.covered[shapeKey(m)] {
						uncovered++
					}
					if m.HasStructArg() {
						seen["struct"]++
					}
				}
				if c.Target == "bpf" {
					seen["bpf target"]++
				}
				if len(c.Progs) >= 38 {
					seen["link limit"]++
				}
				for _, pr := range c.Progs {
					cookies[cookieClass(uint64(pr.Cookie))] = true
					if pr.FuncIP {
						seen["func_ip"]++
					}
					if pr.Sleepable {
						seen["sleepable"]++
					}
					seen[string(pr.Kind)]++
				}
				if modelAttaches(kernel, arch, c) == nil {
					ok++
				} else {
					refused++
				}
			}
			t.Logf("%d shapes (%d not in the catalogue); %d attach, %d refused by the model; %d of uncovered shapes; %v", all, unc, ok, refused, uncovered, seen)
			for n := 0; n <= 12; n++ {
				if !nargs[n] {
					t.Errorf("no function of %d arguments drawn", n)
				}
			}
			for _, cl := range []string{"0", "small", "32-bit", "negative", "64-bit"} {
				if !cookies[cl] {
					t.Errorf("no %s cookie drawn", cl)
				}
			}
			want := []string{"struct", "bpf target", "link limit", "func_ip", "sleepable", "fentry", "fexit", "fmod_ret"}
			if btfmodel.Kernel(kernel).Has(btfmodel.CapFsession) {
				want = append(want, "fsession")
			}
			for _, w := range want {
				if seen[w] == 0 {
					t.Errorf("no %s drawn", w)
				}
			}
			if ok < len(cases)/2 || refused < len(cases)/50 {
				t.Errorf("%d attach and %d are refused: want most to attach and some refused", ok, refused)
			}
			if uncovered < len(cases)/2 {
				t.Errorf("%d of %d draws have a shape the catalogue lacks: want most", uncovered, len(cases))
			}
		})
	}
}

func cookieClass(c uint64) string {
	switch {
	case c == 0:
		return "0"
	case c < 0x80:
		return "small"
	case c <= 0xffffffff:
		return "32-bit"
	case c >= 0xffffffff80000000:
		return "negative"
	}
	return "64-bit"
}
