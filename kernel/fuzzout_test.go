package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
	"github.com/trampjit/trampjit/kernel/wire"
)

// fuzzGuestScript is a fake qemu (fakeGuest) for a campaign of count requests, batch per
// boot: boot k answers batch order[k] (the agent refuses every case at attach), -1 is a boot
// that hangs after touching mark (the run is killed in it).
func fuzzGuestScript(t *testing.T, count, batch int, order []int, mark string) string {
	hello := frameLine(t, wire.KindHello, wire.Hello{Release: "fake"})
	s := "n=$(cat $STATE/n 2>/dev/null || echo 0)\necho $((n+1)) > $STATE/n\ncase $n in\n"
	for k, b := range order {
		s += fmt.Sprintf("%d)\n", k)
		if b < 0 {
			s += "touch " + mark + "\nsleep 60\n;;\n"
			continue
		}
		s += hello
		for i := b * batch; i < min((b+1)*batch, count); i++ {
			s += frameLine(t, wire.KindCapture, wire.CaptureResult{ID: fmt.Sprintf("fuzz-1-%d", i),
				Error: fmt.Sprintf("attach program 1 (fentry) to f%d: invalid argument", i), Errno: "EINVAL", Stage: "attach"})
		}
		s += frameLine(t, wire.KindDone, wire.Done{Cases: min((b+1)*batch, count) - b*batch}) + ";;\n"
	}
	return s + "esac\n"
}

// fuzzCorpus is a corpus directory with 6.12 x86_64's BTF and no kernel.json: the fake
// guest's cached kernel is the build booted.
func fuzzCorpus(t *testing.T) string {
	dir := t.TempDir()
	btf, _ := filepath.Abs(filepath.Join("..", "testdata", "kernel", "6.12-amd64", "vmlinux.btf.xz"))
	if err := os.Symlink(btf, filepath.Join(dir, "vmlinux.btf.xz")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestImageFuzzKilled: a campaign killed in its third boot keeps the two batches it
// finished in results.jsonl and a summary of them, which RediffFuzz reads; resumed, it
// captures only the requests after them and ends with the results an uninterrupted run
// writes, byte for byte. A write the kill cut short is dropped.
func TestImageFuzzKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("boots fake guests (shell scripts): ~10 s")
	}
	corpus := fuzzCorpus(t)
	base := FuzzOptions{Kernel: "6.12", Arch: "amd64", Count: 25, Seed: 1, Corpus: corpus, Batch: 10}

	whole := base
	whole.OutDir = t.TempDir()
	fakeGuest(t, fuzzGuestScript(t, 25, 10, []int{0, 1, 2}, ""))
	if _, err := ImageFuzz(context.Background(), whole); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(whole.OutDir, fuzzResults))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(want), "\n"); n != 25 {
		t.Fatalf("uninterrupted run: %d results, want 25", n)
	}

	// The third boot hangs; the run is cancelled in it, as an interrupt or a kill finds it.
	mark := filepath.Join(t.TempDir(), "third-boot")
	fakeGuest(t, fuzzGuestScript(t, 25, 10, []int{0, 1, -1, 2}, mark))
	killed := base
	killed.OutDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(mark); err == nil {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	if _, err := ImageFuzz(ctx, killed); err == nil {
		t.Fatal("the killed run returned no error")
	}
	got, _ := os.ReadFile(filepath.Join(killed.OutDir, fuzzResults))
	if strings.Count(string(got), "\n") != 20 || string(got) != string(want[:len(got)]) {
		t.Fatalf("killed run: %d results, not the first 20 of the uninterrupted run's", strings.Count(string(got), "\n"))
	}
	for _, name := range []string{fuzzMinimised, fuzzMinimisedCase} {
		if _, err := os.Stat(filepath.Join(killed.OutDir, name)); err == nil {
			t.Errorf("%s written before the campaign ended", name)
		}
	}
	// The kill also cut an append short.
	f, err := os.OpenFile(filepath.Join(killed.OutDir, fuzzResults), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(want[len(got) : len(got)+100])
	f.Close()
	rep, err := RediffFuzz(killed.OutDir, corpus)
	if err != nil {
		t.Fatalf("rediff of the killed run: %v", err)
	}
	if rep.Requests != 20 || rep.Kernel != "6.12" || rep.Arch != "amd64" || rep.Boots != 2 {
		t.Errorf("rediff of the killed run: %d requests, %s-%s, %d boots; want 20, 6.12-amd64, 2", rep.Requests, rep.Kernel, rep.Arch, rep.Boots)
	}

	resumed := killed
	resumed.Resume = true
	rep, err = ImageFuzz(context.Background(), resumed)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 25 || rep.Boots != 3 {
		t.Errorf("resumed run: %d requests, %d boots; want 25, 3 (the two its summary kept, one)", rep.Requests, rep.Boots)
	}
	got, _ = os.ReadFile(filepath.Join(resumed.OutDir, fuzzResults))
	if string(got) != string(want) {
		t.Errorf("resumed results.jsonl (%d bytes) is not the uninterrupted run's (%d)", len(got), len(want))
	}
	for _, name := range []string{fuzzSummary, fuzzMinimised, fuzzMinimisedCase} {
		if _, err := os.Stat(filepath.Join(resumed.OutDir, name)); err != nil {
			t.Errorf("resumed run: %v", err)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(resumed.OutDir, ".*tmp*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}

	// Another seed's draws, or more results than the count, are not resumed.
	other := resumed
	other.Seed = 2
	if _, err := ImageFuzz(context.Background(), other); err == nil || !strings.Contains(err.Error(), "another campaign") {
		t.Errorf("resume with another seed: %v, want a refusal", err)
	}
	fewer := resumed
	fewer.Count = 24
	if _, err := ImageFuzz(context.Background(), fewer); err == nil || !strings.Contains(err.Error(), "more than --count") {
		t.Errorf("resume with a smaller count: %v, want a refusal", err)
	}
	if _, err := ImageFuzz(context.Background(), FuzzOptions{Kernel: "6.12", Arch: "amd64", Count: 5, Seed: 1, Corpus: corpus,
		OutDir: t.TempDir(), Resume: true}); err == nil || !strings.Contains(err.Error(), "nothing to resume") {
		t.Errorf("resume of an empty directory: %v, want a refusal", err)
	}
}

// TestFuzzBootTimeout: a guest's limit covers its batch at the slowest rate measured, 6.12
// riscv64 under TCG on a loaded host (4.6 s a case, and about 30 s to boot and read
// kallsyms), for make test's 50 and the campaign's 250; a limit below that blames the case
// in flight for a hang it did not cause.
func TestFuzzBootTimeout(t *testing.T) {
	for _, n := range []int{50, 250} {
		if need := 30*time.Second + time.Duration(n)*4600*time.Millisecond; fuzzBootTimeout(n) < need*3/2 {
			t.Errorf("%d cases: %v, want at least 1.5 times the %v they took", n, fuzzBootTimeout(n), need)
		}
	}
}

// TestFuzzCaptureAgain: the guest dies on b (the limit ran out, or a panic); c is captured by
// a second guest, and b once more by a third, which answers it.
func TestFuzzCaptureAgain(t *testing.T) {
	hello := frameLine(t, wire.KindHello, wire.Hello{Release: "fake"})
	refused := func(id string) string {
		return frameLine(t, wire.KindCapture, wire.CaptureResult{ID: id, Error: "attach program 1 (fentry) to f: bad address", Errno: "EFAULT", Stage: "attach"})
	}
	done := frameLine(t, wire.KindDone, wire.Done{Cases: 1})
	fakeGuest(t, "n=$(cat $STATE/n 2>/dev/null || echo 0)\necho $((n+1)) > $STATE/n\ncase $n in\n"+
		"0)\n"+hello+refused("a")+"echo 'Kernel panic - not syncing: Fatal exception'\n;;\n"+
		"1)\n"+hello+refused("c")+done+";;\n"+
		"2)\n"+hello+refused("b")+done+";;\nesac\n")
	o := FuzzOptions{Kernel: "6.12", Arch: "amd64", Corpus: fuzzCorpus(t)}
	got, boots, err := fuzzCapture(context.Background(), o, vm.Pin{}, []Case{{ID: "a", Func: "f"}, {ID: "b", Func: "f"}, {ID: "c", Func: "f"}})
	if err != nil {
		t.Fatal(err)
	}
	if boots != 3 {
		t.Errorf("%d boots, want 3", boots)
	}
	for i, id := range []string{"a", "b", "c"} {
		if c := got[i]; c.ID != id || !c.Captured() || c.Errno != "EFAULT" {
			t.Errorf("case %d: %s %s %s (%s), want %s refused with EFAULT", i, c.ID, c.Stage, c.Errno, c.Error, id)
		}
	}
}

// TestImageFuzzResumeDied: resumed, a campaign captures again, in one boot, the requests
// a guest died on, and writes what they gave in their places: the results end as an
// uninterrupted run's, byte for byte.
func TestImageFuzzResumeDied(t *testing.T) {
	if testing.Short() {
		t.Skip("boots fake guests (shell scripts)")
	}
	o := FuzzOptions{Kernel: "6.12", Arch: "amd64", Count: 25, Seed: 1, Corpus: fuzzCorpus(t), Batch: 10, OutDir: t.TempDir()}
	fakeGuest(t, fuzzGuestScript(t, 25, 10, []int{0, 1, 2}, ""))
	if _, err := ImageFuzz(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(o.OutDir, fuzzResults))
	if err != nil {
		t.Fatal(err)
	}
	fcs, _, err := readResults(o.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	const died = 12
	cc := *fcs[died].Corpus
	cc.Stage, cc.Error, cc.Errno = "guest", "guest hung: agent did not finish within 1m0s", ""
	fcs[died].Corpus, fcs[died].Diff = &cc, fuzzDiff(&cc)
	if fcs[died].Diff.Verdict != NotCaptured {
		t.Fatalf("the doctored result is %s, not not-captured", fcs[died].Diff.Verdict)
	}
	if err := rewriteResults(o.OutDir, fcs); err != nil {
		t.Fatal(err)
	}
	// The one boot the resumed run needs answers the request the guest died on.
	fakeGuest(t, oneCase(t, died))
	o.Resume = true
	rep, err := ImageFuzz(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 25 || rep.NotCaptured != 0 {
		t.Errorf("resumed run: %d requests, %d not captured; want 25, 0", rep.Requests, rep.NotCaptured)
	}
	got, _ := os.ReadFile(filepath.Join(o.OutDir, fuzzResults))
	if string(got) != string(want) {
		t.Errorf("resumed results.jsonl (%d bytes) is not the uninterrupted run's (%d)", len(got), len(want))
	}

	// Again names a request to capture again (after a fix to the loader): the fake guest,
	// asked for it alone, answers it as before.
	mark := filepath.Join(t.TempDir(), "booted")
	fakeGuest(t, "touch "+mark+"\n"+oneCase(t, died))
	o.Again = []string{fmt.Sprintf("fuzz-1-%d", died)}
	if _, err := ImageFuzz(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("--again %s booted no guest", o.Again[0])
	}
	if got, _ := os.ReadFile(filepath.Join(o.OutDir, fuzzResults)); string(got) != string(want) {
		t.Errorf("results.jsonl after --again is not the uninterrupted run's")
	}
	o.Again = []string{"fuzz-1-99"}
	if _, err := ImageFuzz(context.Background(), o); err == nil || !strings.Contains(err.Error(), "not a request of the campaign") {
		t.Errorf("again with an unknown request: %v, want a refusal", err)
	}

	// The campaign names its profile, and a rediff against another profile's corpus (its
	// BTF would model every request wrongly) is refused.
	if k, a, err := CampaignProfile(o.OutDir); err != nil || k != "6.12" || a != "amd64" {
		t.Errorf("CampaignProfile: %s-%s, %v; want 6.12-amd64", k, a, err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "kernel.json"), []byte(`{"kernel": "7.2", "arch": "arm64"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RediffFuzz(o.OutDir, other); err == nil || !strings.Contains(err.Error(), "a 6.12-amd64 campaign") {
		t.Errorf("rediff against 7.2-arm64's corpus: %v, want a refusal", err)
	}
}

// oneCase is a fake guest's answer to the one request fuzz-1-<i>, refused at attach as
// fuzzGuestScript's are.
func oneCase(t *testing.T, i int) string {
	return frameLine(t, wire.KindHello, wire.Hello{Release: "fake"}) +
		frameLine(t, wire.KindCapture, wire.CaptureResult{ID: fmt.Sprintf("fuzz-1-%d", i),
			Error: fmt.Sprintf("attach program 1 (fentry) to f%d: invalid argument", i), Errno: "EINVAL", Stage: "attach"}) +
		frameLine(t, wire.KindDone, wire.Done{Cases: 1})
}
