package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func compareRun(t *testing.T, args ...string) compareJSON {
	t.Helper()
	code, out, errOut := trampjit(append([]string{"compare", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res compareJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// checkGrid: every column's instructions are on the grid once each, in order, in their own
// section, the cells say what the instructions say, and a row with a marked cell is marked.
func checkGrid(t *testing.T, res *compareJSON) {
	t.Helper()
	if len(res.Grid) != len(res.Sections) {
		t.Fatalf("grid has %d sections, the columns %d", len(res.Grid), len(res.Sections))
	}
	next := make([]int, len(res.Columns)) // instructions seen, per column
	seen := make([]map[int]bool, len(res.Columns))
	for c := range seen {
		seen[c] = map[int]bool{}
	}
	for k, g := range res.Grid {
		if g.Name != res.Sections[k] {
			t.Errorf("grid section %d is %s, want %s", k, g.Name, res.Sections[k])
		}
		for c := range res.Columns {
			if n := sectionCount(res.Columns[c], g.Name); (g.Counts[c] == nil) != (n == "(none)" || n == "(refused)") {
				t.Errorf("%s, column %d: counts %v, the column has %s", g.Name, c, g.Counts[c], n)
			}
		}
		last := make([]int, len(res.Columns)) // a section's instructions in order (a section may recur)
		for c := range last {
			last[c] = -1
		}
		cells := make([]int, len(res.Columns))
		defer func(name string, counts []*compareSection) {
			for c, n := range cells {
				if counts[c] != nil && counts[c].Insns != n {
					t.Errorf("%s, column %d: %d instructions counted, %d on the grid", name, c, counts[c].Insns, n)
				}
			}
		}(g.Name, g.Counts)
		for _, r := range g.Rows {
			if len(r.Cells) != len(res.Columns) {
				t.Fatalf("%s: a row of %d cells for %d columns", g.Name, len(r.Cells), len(res.Columns))
			}
			marked := false
			for c, cell := range r.Cells {
				if cell == nil {
					continue
				}
				if cell.Insn <= last[c] || seen[c][cell.Insn] {
					t.Fatalf("%s, column %d: instruction %d after %d", g.Name, c, cell.Insn, last[c])
				}
				last[c], seen[c][cell.Insn] = cell.Insn, true
				next[c]++
				cells[c]++
				in := res.Columns[c].Insns[cell.Insn]
				if in.Section != g.Name || in.Offset != cell.Offset || in.Bytes != cell.Bytes || in.Asm != cell.Asm ||
					in.Differs != cell.Differs || fmt.Sprint(in.Slots) != fmt.Sprint(cell.Slots) {
					t.Errorf("%s, column %d: cell %+v for instruction %+v", g.Name, c, *cell, in)
				}
				marked = marked || cell.Differs
			}
			if marked != r.Differs {
				t.Errorf("%s: row marked %v, its cells %v", g.Name, r.Differs, marked)
			}
		}
	}
	for c, col := range res.Columns {
		if next[c] != len(col.Insns) {
			t.Errorf("column %s: %d of %d instructions on the grid", col.Title, next[c], len(col.Insns))
		}
	}
}

// TestCompareGrid: three architectures, and one architecture at two profiles beside the
// kernel's image: the grid holds each listing whole, and the aligned rows pair the kernel's
// instructions with the identical model's, byte for byte.
func TestCompareGrid(t *testing.T) {
	three := compareRun(t, "--btf", corpora+"6.12-amd64/vmlinux.btf.xz", "--func", "bpf_modify_return_test", "--fentry", "1", "--fmod-ret", "1", "--fexit", "1")
	checkGrid(t, &three)
	// Refused columns have no cells and no counts.
	refused := compareRun(t, "--proto", "int f(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f, u64 g, u64 h, u64 i)", "--fentry", "1", "--kernel", "6.1,6.12")
	checkGrid(t, &refused)
	n := 0
	for _, c := range refused.Columns {
		if c.Refusal != "" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d of 6 columns refused; amd64 6.1, arm64 6.1 and 6.12 and riscv64 6.1 refuse 9 arguments", n)
	}
	res := compareRun(t, "--btf", corpora+"7.2-riscv64/vmlinux.btf.xz", "--func", "bpf_fentry_test1", "--fentry", "1", "--fexit", "1",
		"--arch", "riscv64", "--kernel", "6.12,7.2", "--corpus", corpora+"7.2-riscv64", "--case", "bpf_fentry_test1-fentry-fexit")
	checkGrid(t, &res)
	marked := 0
	for _, g := range res.Grid {
		for _, r := range g.Rows {
			k, m := r.Cells[2], r.Cells[1]
			if (k == nil) != (m == nil) || k != nil && (k.Bytes != m.Bytes || k.Offset != m.Offset || k.Differs) {
				t.Errorf("%s: kernel %+v beside the 7.2 model's %+v", g.Name, k, m)
			}
			if m != nil && m.Differs {
				marked++
			}
		}
	}
	if marked == 0 {
		t.Error("nothing marked between 6.12 and 7.2")
	}
}

// TestCompareSlots: the instructions name the frame slots the emulator finds them touching
// (emu's hand-written frame of this image, from arch_prepare_bpf_trampoline's layout), on
// the model's column and on the kernel's image of the same request.
func TestCompareSlots(t *testing.T) {
	res := compareRun(t, "--proto", "int bpf_fentry_test2(int a, u64 b)", "--fentry", "1", "--fexit", "1", "--arch", "amd64", "--kernel", "7.2")
	want := map[int]string{0x8: "<- saved rbx", 0x15: "<- ctx[0] a", 0x19: "<- ctx[1] b", 0x33: "<- run_ctx.cookie",
		0x41: "run_ctx.cookie", 0x52: "ctx[0] a", 0x75: "ctx[1] b", 0x7e: "<- retval", 0xd6: "retval", 0xda: "saved rbx"}
	got := map[int]string{}
	for _, in := range res.Columns[0].Insns {
		got[in.Offset] = strings.Join(in.Slots, ", ")
	}
	for off, w := range want {
		if got[off] != w {
			t.Errorf("%x: slots %q, want %q", off, got[off], w)
		}
	}
	// A corpus column takes the model's slots where its image is the model's.
	k := compareRun(t, "--corpus", corpora+"7.2-amd64", "--case", "bpf_fentry_test1-fentry-fexit", "--arch", "amd64")
	if len(k.Columns) != 2 || k.Columns[1].Against == nil || *k.Columns[1].Against != 0 {
		t.Fatalf("columns %+v", k.Columns)
	}
	named := 0
	for i, in := range k.Columns[1].Insns {
		if in.Differs || fmt.Sprint(in.Slots) != fmt.Sprint(k.Columns[0].Insns[i].Slots) {
			t.Errorf("kernel %x: %v (marked %v), model %v", in.Offset, in.Slots, in.Differs, k.Columns[0].Insns[i].Slots)
		}
		if len(in.Slots) > 0 {
			named++
		}
	}
	if named < 8 {
		t.Errorf("%d kernel instructions name a slot", named)
	}
	if k.Columns[1].Frame == nil || k.Columns[0].Frame == nil || len(k.Columns[1].Frame.Slots) != len(k.Columns[0].Frame.Slots) {
		t.Errorf("frames: model %+v, kernel %+v", k.Columns[0].Frame, k.Columns[1].Frame)
	}
}

// TestCompareCaseAlone: --corpus and --case without request flags compare the case's own
// request on every architecture beside the kernel's image.
func TestCompareCaseAlone(t *testing.T) {
	c := corpusCase(t, "6.12-arm64", "bpf_fentry_test1-fentry-fexit")
	res := compareRun(t, "--corpus", corpora+"6.12-arm64", "--case", c.ID)
	var titles []string
	for _, col := range res.Columns {
		titles = append(titles, col.Title)
	}
	if fmt.Sprint(titles) != "[amd64 6.12 arm64 6.12 riscv64 6.12 arm64 6.12 kernel]" {
		t.Fatalf("columns %v", titles)
	}
	var code strings.Builder
	for _, in := range res.Columns[3].Insns {
		code.WriteString(in.Bytes)
		if in.Differs {
			t.Errorf("kernel column: %s marked", in.Insn.String())
		}
	}
	if code.String() != c.Image || res.Columns[3].Against == nil || *res.Columns[3].Against != 1 {
		t.Errorf("kernel column %s compared with %v; the capture %s", code.String(), res.Columns[3].Against, c.Image)
	}
	if code, _, errOut := trampjit("compare", "--corpus", corpora+"6.12-arm64", "--case", "no-such-case"); code != exitUsage || !strings.Contains(errOut, "no such case") {
		t.Errorf("a missing case: exit %d, %q", code, errOut)
	}
}
