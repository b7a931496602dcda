package kernel

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/kernel/wire"
)

// progsObject is built from kernel/testdata/verify/progs.bpf.c (see the command there).
const progsObject = "testdata/verify/progs.bpf.o"

func TestProgramsFromELF(t *testing.T) {
	progs, err := ProgramsFromELF(progsObject, ELFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkProgsObject(t, progs)
}

// checkProgsObject checks what the object's three programs must look like after conversion.
func checkProgsObject(t *testing.T, progs []wire.VerifyProgram) {
	t.Helper()
	if len(progs) != 3 {
		t.Fatalf("%d programs, want 3", len(progs))
	}
	byName := map[string]wire.VerifyProgram{}
	for _, p := range progs {
		byName[p.Name] = p
	}
	c := byName["count_test1"]
	if c.Type != "tracing" || c.AttachType != "fentry" || c.AttachTo != "bpf_fentry_test1" || c.License != "GPL" || c.Sleepable {
		t.Errorf("count_test1: %+v", c)
	}
	// The subprogram twice() is linked in after the program's own 19 slots.
	if c.Insns.Len() != 22 {
		t.Errorf("count_test1: %d instruction slots, want 22 (19 + the subprogram's 3)", c.Insns.Len())
	}
	maps := map[string]wire.VerifyMap{}
	for _, m := range c.Maps {
		maps[m.Name] = m
	}
	if m := maps["counts"]; m.Type != "hash" || m.KeySize != 4 || m.ValueSize != 8 || m.MaxEntries != 64 || m.Freeze {
		t.Errorf("counts: %+v", m)
	}
	if m := maps[".rodata"]; m.Type != "array" || m.MaxEntries != 1 || !m.Freeze || len(m.Data) != 8 || m.Data[0] != 7 {
		t.Errorf(".rodata: %+v", m)
	}
	want := []wire.MapRef{{Insn: 4, Map: "counts"}, {Insn: 10, Map: ".rodata"}}
	if len(c.MapRefs) != 2 || c.MapRefs[0] != want[0] || c.MapRefs[1] != want[1] {
		t.Errorf("map refs %+v, want %+v", c.MapRefs, want)
	}
	if c.Insns.Src(10) != wire.PseudoMapValue || c.Insns.Src(4) != wire.PseudoMapFD {
		t.Errorf("ld_imm64 src_regs %d, %d", c.Insns.Src(4), c.Insns.Src(10))
	}
	// The call to twice() is resolved to its place: pc+1+imm = 19.
	if c.Insns.Op(15) != wire.OpCall || 15+1+int(c.Insns.Imm(15)) != 19 {
		t.Errorf("bpf-to-bpf call: op %#x imm %d", c.Insns.Op(15), c.Insns.Imm(15))
	}
	if len(c.BTF) == 0 || len(c.FuncInfo) != 2*8 || len(c.LineInfo) == 0 {
		t.Errorf("BTF %d bytes, func info %d, line info %d: want the object's BTF, two funcs", len(c.BTF), len(c.FuncInfo), len(c.LineInfo))
	}
	if x := byName["exit_ret1"]; x.AttachType != "fexit" || x.Insns.Len() != 2 || len(x.Maps) != 0 {
		t.Errorf("exit_ret1: %+v", x)
	}
	if l := byName["lsm_file_open"]; l.Type != "lsm" || l.AttachType != "lsm_mac" || l.AttachTo != "file_open" || !l.Sleepable {
		t.Errorf("lsm_file_open: %+v", l)
	}
	for _, p := range progs {
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// TestProgramsFromELFClang rebuilds the object with the installed clang and converts it.
func TestProgramsFromELFClang(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang is not installed (Debian: apt-get install clang); the committed object is tested instead")
	}
	out := filepath.Join(t.TempDir(), "progs.bpf.o")
	cmd := exec.Command("clang", "-g", "-O2", "-target", "bpf", "-c", "testdata/verify/progs.bpf.c", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, b)
	}
	progs, err := ProgramsFromELF(out, ELFOptions{NoBTF: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 3 {
		t.Fatalf("%d programs", len(progs))
	}
	for _, p := range progs {
		if p.BTF != nil || p.FuncInfo != nil || p.LineInfo != nil {
			t.Errorf("%s: NoBTF, yet BTF %d bytes", p.Name, len(p.BTF))
		}
	}
}

func TestProgramFromInstructions(t *testing.T) {
	maps := []wire.VerifyMap{{Name: "a", Type: "array", KeySize: 4, ValueSize: 8, MaxEntries: 1},
		{Name: "h", Type: "hash", KeySize: 4, ValueSize: 8, MaxEntries: 8}}
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, 1),                          // by index: h
		asm.LoadMapValue(asm.R2, 0, 16).WithReference("a"), // by name, offset 16
		asm.Mov.Imm(asm.R0, 0),
		asm.Ja.Label("out"),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return().WithSymbol("out"),
	}
	p, err := ProgramFromInstructions(wire.VerifyProgram{Name: "x", AttachType: "fexit", AttachTo: "bpf_fentry_test1", Maps: maps}, insns)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != "tracing" || p.License != "GPL" || p.Insns.Len() != 8 || p.BTF != nil {
		t.Errorf("program %+v", p)
	}
	if len(p.MapRefs) != 2 || p.MapRefs[0] != (wire.MapRef{Insn: 0, Map: "h"}) || p.MapRefs[1] != (wire.MapRef{Insn: 2, Map: "a"}) {
		t.Errorf("map refs %+v", p.MapRefs)
	}
	if p.Insns.Imm(3) != 16 { // the value offset stays in the second half
		t.Errorf("map value offset %d", p.Insns.Imm(3))
	}
	if p.Insns.Op(5) != 0x05 || p.Insns[5*8+2] != 1 { // ja +1
		t.Errorf("jump not resolved: %x", p.Insns[5*8:6*8])
	}
	if insns[3].Offset != -1 {
		t.Error("the caller's instructions were modified")
	}
	_, err = ProgramFromInstructions(wire.VerifyProgram{Name: "y", AttachType: "lsm_mac", AttachTo: "file_open"}, asm.Instructions{asm.LoadMapPtr(asm.R1, 3), asm.Return()})
	if err == nil || !strings.Contains(err.Error(), "map #3") {
		t.Errorf("a map index past the maps: %v", err)
	}
}

// coreObject is built from kernel/testdata/verify/core.bpf.c.
const coreObject = "testdata/verify/core.bpf.o"

// corpusBTF loads a kernel's committed vmlinux BTF (testdata/kernel/<kernel>-<arch>).
func corpusBTF(t *testing.T, tag string) *btf.Spec {
	t.Helper()
	s, err := btfmodel.LoadFile(filepath.Join("..", "testdata", "kernel", tag, "vmlinux.btf.xz"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProgramsFromELFCORE(t *testing.T) {
	if _, err := ProgramsFromELF(coreObject, ELFOptions{}); err == nil || !strings.Contains(err.Error(), "no kernel BTF") {
		t.Errorf("CO-RE without the kernel's BTF: %v", err)
	}
	spec := corpusBTF(t, "6.12-amd64")
	progs, err := ProgramsFromELF(coreObject, ELFOptions{KernelBTF: spec})
	if err != nil {
		t.Fatal(err)
	}
	var sc *btf.Struct
	if err := spec.TypeByName("sock_common", &sc); err != nil {
		t.Fatal(err)
	}
	want := -1
	for _, m := range sc.Members {
		if m.Name == "skc_family" {
			want = int(m.Offset.Bytes())
		}
	}
	p := progs[0]
	// Slot 1 is r1 = *(u16 *)(r1 + off): the offset is bytes 2..3 of the instruction.
	if got := int(int16(binary.LittleEndian.Uint16(p.Insns[1*8+2:]))); got != want || want <= 0 {
		t.Errorf("relocated offset %d, want skc_family's %d", got, want)
	}
	if len(p.Maps) != 1 || p.Maps[0].Name != ".bss" || len(p.Maps[0].Data) != int(p.Maps[0].ValueSize) || p.Maps[0].Freeze {
		t.Errorf("maps %+v, want .bss, zeroed, not frozen", p.Maps)
	}
}

func TestProgramForSection(t *testing.T) {
	p, err := ProgramForSection("x", "lsm.s/file_open")
	if err != nil || p.Type != "lsm" || p.AttachType != "lsm_mac" || p.AttachTo != "file_open" || !p.Sleepable {
		t.Errorf("lsm.s: %+v %v", p, err)
	}
	p, err = ProgramForSection("y", "fmod_ret/__x64_sys_getpid")
	if err != nil || p.Type != "tracing" || p.AttachType != "fmod_ret" || p.AttachTo != "__x64_sys_getpid" || p.Sleepable {
		t.Errorf("fmod_ret: %+v %v", p, err)
	}
	for _, bad := range []string{"kprobe/f", "fentry", "fentry/", "fentry.x/f"} {
		if _, err := ProgramForSection("z", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestVerifyProgramsJSON: the transport format written by hand (testdata/verify/
// programs.json) is the same request as the programs built in Go for the guest test.
func TestVerifyProgramsJSON(t *testing.T) {
	b, err := os.ReadFile("testdata/verify/programs.json")
	if err != nil {
		t.Fatal(err)
	}
	var progs []wire.VerifyProgram
	if err := json.Unmarshal(b, &progs); err != nil {
		t.Fatal(err)
	}
	want := map[string]verifyCase{}
	for _, c := range verifyCases(t) {
		want[c.prog.Name] = c
	}
	for _, p := range progs {
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
		c, ok := want[p.Name]
		if !ok {
			t.Fatalf("%s: no such guest test program", p.Name)
		}
		g, err := ProgramFromInstructions(c.prog, c.insns)
		if err != nil {
			t.Fatal(err)
		}
		gj, _ := json.Marshal(g)
		pj, _ := json.Marshal(p)
		if string(gj) != string(pj) {
			t.Errorf("%s:\n json %s\n   go %s", p.Name, pj, gj)
		}
	}
}
