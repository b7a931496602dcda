package btfmodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestProfilesStateEveryCapability: a profile that leaves a capability unset would model a
// behaviour nobody decided; the table must say true or false for each.
func TestProfilesStateEveryCapability(t *testing.T) {
	known := map[Capability]bool{}
	for _, c := range Capabilities {
		if known[c.Cap] {
			t.Errorf("capability %s listed twice", c.Cap)
		}
		known[c.Cap] = true
		if c.Doc == "" {
			t.Errorf("capability %s has no doc", c.Cap)
		}
	}
	for _, p := range Profiles {
		for _, c := range Capabilities {
			if !p.Stated(c.Cap) {
				t.Errorf("profile %s does not state capability %s", p.Kernel, c.Cap)
			}
		}
		for c := range p.caps {
			if !known[c] {
				t.Errorf("profile %s states %s, which Capabilities does not list", p.Kernel, c)
			}
		}
	}
}

func TestProfilesOrdered(t *testing.T) {
	for i := 1; i < len(Profiles); i++ {
		if Profiles[i-1].Version.Compare(Profiles[i].Version) >= 0 {
			t.Errorf("profile %s (%s) is not newer than %s (%s)", Profiles[i].Kernel, Profiles[i].Version,
				Profiles[i-1].Kernel, Profiles[i-1].Version)
		}
	}
	if ProfileFor(DefaultKernel) == nil {
		t.Errorf("DefaultKernel %s is no profile", DefaultKernel)
	}
}

// TestCapabilitySince checks each profile's answer against when the capability arrived: a
// version alone decides unless a config option does or the build has a backport.
func TestCapabilitySince(t *testing.T) {
	for _, c := range Capabilities {
		if c.Since.IsZero() && c.After.IsZero() {
			t.Errorf("capability %s: no Since and no After", c.Cap)
		}
		if !c.After.IsZero() && !c.Since.IsZero() && c.After.Compare(c.Since) >= 0 {
			t.Errorf("capability %s: After %s is not before Since %s", c.Cap, c.After, c.Since)
		}
		if c.Config != "" && !strings.HasPrefix(c.Config, "CONFIG_") {
			t.Errorf("capability %s: config %q", c.Cap, c.Config)
		}
		for _, p := range Profiles {
			if c.Config != "" || !p.Stated(c.Cap) { // unstated: TestProfilesStateEveryCapability
				continue
			}
			s, has := p.Version.Series(), p.Has(c.Cap)
			backported := slices.Contains(c.Backport, p.Kernel)
			if backported && !has {
				t.Errorf("capability %s: backported to %s, which lacks it", c.Cap, p.Kernel)
			}
			tooOld := (c.After.IsZero() && s.Compare(c.Since) < 0) || (!c.After.IsZero() && s.Compare(c.After) <= 0)
			if tooOld && has && !backported {
				t.Errorf("capability %s: profile %s (%s) has it, but it arrived after", c.Cap, p.Kernel, p.Version)
			}
			if !c.Since.IsZero() && s.Compare(c.Since) >= 0 && !has {
				t.Errorf("capability %s: profile %s (%s) lacks it, but it arrived by %s", c.Cap, p.Kernel, p.Version, c.Since)
			}
		}
	}
}

// TestProfilesMatchCorpus checks each profile's Debian build against the corpus's kernel.json.
func TestProfilesMatchCorpus(t *testing.T) {
	files, _ := filepath.Glob("../testdata/kernel/*/kernel.json")
	if len(files) == 0 {
		t.Fatal("no testdata/kernel/*/kernel.json")
	}
	seen := map[Kernel]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var kj struct{ Kernel, Suite, Package, Version string }
		if err := json.Unmarshal(b, &kj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p := ProfileFor(Kernel(kj.Kernel))
		if p == nil {
			continue // captured before the model knows it (7.2)
		}
		seen[p.Kernel] = true
		up, _, _ := strings.Cut(kj.Version, "-")
		if v, err := ParseVersion(up); err != nil || v != p.Version {
			t.Errorf("%s: version %s, profile %s says %s (%v)", f, kj.Version, p.Kernel, p.Version, err)
		}
		if kj.Suite != p.Debian.Suite || !regexp.MustCompile(p.Debian.Package).MatchString(kj.Package) {
			t.Errorf("%s: %s %s does not match profile %s's %+v", f, kj.Suite, kj.Package, p.Kernel, p.Debian)
		}
	}
	for _, p := range Profiles {
		if !seen[p.Kernel] {
			t.Errorf("profile %s has no corpus", p.Kernel)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Version
		str  string
	}{{"6.1", Version{6, 1, 0}, "6.1"}, {"6.12.117", Version{6, 12, 117}, "6.12.117"}, {"7.2.0", Version{7, 2, 0}, "7.2"}} {
		v, err := ParseVersion(c.in)
		if err != nil || v != c.want || v.String() != c.str {
			t.Errorf("ParseVersion(%q) = %v %q, %v; want %v %q", c.in, v, v.String(), err, c.want, c.str)
		}
	}
	for _, bad := range []string{"", "6", "6.x", "6.1.2.3", "6.01", "-1.2"} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) accepted", bad)
		}
	}
	// 6.9 < 6.12: numeric, not lexical.
	if (Version{6, 9, 0}).Compare(Version{6, 12, 0}) != -1 || (Version{6, 12, 1}).Compare(Version{6, 12, 0}) != 1 {
		t.Error("Version.Compare is not numeric")
	}
}

func TestKernelNames(t *testing.T) {
	if got := KernelNames(); got != "6.1, 6.12 or 7.2" {
		t.Errorf("KernelNames() = %q", got)
	}
	_, err := ParseKernel("6.6")
	if err == nil || err.Error() != `unknown kernel profile "6.6" (want 6.1, 6.12 or 7.2)` {
		t.Errorf("ParseKernel(6.6): %v", err)
	}
	if Kernel("6.6").Has(CapSignedArgFlag) {
		t.Error("an unknown kernel has a capability")
	}
}

// TestArchLimits states the limits from the kernel corpus's refusals (docs/kernel-facts.md):
// 6.1 x86 six registers, 6.12 x86 twelve slots, arm64 eight registers, 6.1 arm64 BPF targets
// only and no struct arguments; fsession images on both 7.2 corpora. riscv64's come from
// arch/riscv/net/bpf_jit_comp64.c (riscv64_limits_test.go).
func TestArchLimits(t *testing.T) {
	want := map[Arch]map[Kernel]ArchLimits{
		AMD64: {
			Kernel61:  {ArgRegs: 6, MaxRegSlots: 6, StructArgs: true, Trampolines: true, KernelFuncTargets: true, MaxTrampLinks: 38},
			Kernel612: {ArgRegs: 6, MaxRegSlots: 12, StackArgs: true, StructArgs: true, Trampolines: true, KernelFuncTargets: true, MaxTrampLinks: 38},
			// 7.2: links-36-fentry attaches, links-37-fentry is E2BIG at program 37.
			Kernel72: {ArgRegs: 6, MaxRegSlots: 12, StackArgs: true, StructArgs: true, Trampolines: true, KernelFuncTargets: true, Fsession: true, MaxTrampLinks: 36},
		},
		ARM64: {
			Kernel61:  {ArgRegs: 8, MaxRegSlots: 8, Trampolines: true, MaxTrampLinks: 38},
			Kernel612: {ArgRegs: 8, MaxRegSlots: 8, StructArgs: true, Trampolines: true, KernelFuncTargets: true, MaxTrampLinks: 38},
			// 7.2: 9..12 arguments attach (__bpf_sk_lookup, tcp_v4_send_ack); links-37 attaches, 38 is E2BIG.
			Kernel72: {ArgRegs: 8, MaxRegSlots: 12, StackArgs: true, StructArgs: true, Trampolines: true, KernelFuncTargets: true, Fsession: true, MaxTrampLinks: 37},
		},
		RISCV64: riscv64Limits,
	}
	for _, a := range AllArches {
		for _, p := range Profiles {
			w, ok := want[a][p.Kernel]
			if !ok {
				t.Errorf("%s %s: no expected limits in this test", a, p.Kernel)
				continue
			}
			if got := LimitsFor(a, p.Kernel); got != w {
				t.Errorf("LimitsFor(%s, %s) = %+v, want %+v", a, p.Kernel, got, w)
			}
		}
	}
}
