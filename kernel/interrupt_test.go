package kernel

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trampjit/trampjit/jit"
)

// qemuChildren lists the qemu processes whose parent is pid, or whose process group is
// pid's (what a qemu started by pid without Setpgid would have).
func qemuChildren(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(qemu-system") {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if f[1] == strconv.Itoa(pid) || f[2] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether pid runs (a zombie waiting for a reaper is dead).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// needGuest skips unless a 6.12-amd64 guest can boot here.
func needGuest(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a qemu guest; skipped with -short")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := Fetch(ctx, "6.12", "amd64", nil); err != nil {
		t.Skipf("cannot fetch the 6.12-amd64 kernel: %v", err)
	}
}

// cancelOn is a progress writer that cancels when a line contains trigger, and records
// every qemu this process starts meanwhile.
type cancelOn struct {
	t       *testing.T
	trigger string
	cancel  func()
	mu      sync.Mutex
	qemus   map[int]bool
	at      time.Time // when it cancelled
}

func (w *cancelOn) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range qemuChildren(os.Getpid()) {
		w.qemus[p] = true
	}
	if strings.Contains(string(b), w.trigger) && w.at.IsZero() {
		w.at = time.Now()
		w.cancel()
	}
	return len(b), nil
}

// TestCaptureInterrupted cancels a capture after the guest booted: before any case is in
// (the audit's case: every case became "refused at guest: agent crashed" and overwrote the
// corpus) and after the first. Capture must fail, leave the corpus byte-identical, record
// no cut case as a refusal, and leave no qemu and no work directory.
func TestCaptureInterrupted(t *testing.T) {
	needGuest(t)
	var cases []Case
	for _, f := range []string{"bpf_fentry_test1", "bpf_fentry_test2", "bpf_fentry_test3", "bpf_fentry_test4", "bpf_fentry_test5", "bpf_fentry_test6"} {
		cases = append(cases, Case{ID: f + "-fentry-fexit", Func: f, Progs: []jit.Prog{{Kind: jit.Fentry}, {Kind: jit.Fexit}}})
	}
	for _, trigger := range []string{"booted in", ": case "} {
		t.Run(strings.Trim(trigger, ": "), func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // where Capture makes its work directory
			parent, dir := oldCorpus(t)
			before := snapshot(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			w := &cancelOn{t: t, trigger: trigger, cancel: cancel, qemus: map[int]bool{}}
			t0 := time.Now()
			rep, err := Capture(ctx, CaptureOptions{Kernel: "6.12", Arch: "amd64", Cases: cases, OutDir: dir, Progress: w})
			t.Logf("returned after %v, %v after the interrupt: %v", time.Since(t0), time.Since(w.at), err)
			if d := time.Since(w.at); d > 5*time.Second {
				t.Errorf("took %v to stop after the interrupt", d)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Capture = %v, want an error wrapping context.Canceled", err)
			}
			if len(w.qemus) == 0 {
				t.Error("no qemu seen: the test did not interrupt a running guest")
			}
			for p := range w.qemus {
				if alive(p) {
					t.Errorf("qemu %d still runs", p)
				}
			}
			if left := qemuChildren(os.Getpid()); len(left) > 0 {
				t.Errorf("qemu left behind: %v", left)
			}
			if got := snapshot(t, dir); !equalMaps(got, before) {
				t.Errorf("the corpus changed")
			}
			if ents, _ := filepath.Glob(filepath.Join(tmp, "trampjit-guest-*")); len(ents) > 0 {
				t.Errorf("work directories left: %v", ents)
			}
			for _, c := range rep.Cases {
				if c.Stage == "guest" {
					t.Errorf("case %s recorded as a guest failure: %s", c.ID, c.Error)
				}
			}
			partial := dir + PartialSuffix
			ents, _ := os.ReadDir(parent)
			if len(rep.Cases) == 0 {
				if len(ents) != 1 {
					t.Errorf("nothing completed, yet %v beside the corpus", ents)
				}
				return
			}
			note, err := os.ReadFile(filepath.Join(partial, PartialNote))
			if err != nil {
				t.Fatalf("%d cases completed but no note: %v", len(rep.Cases), err)
			}
			got, err := os.ReadFile(filepath.Join(partial, "cases.jsonl"))
			if err != nil || strings.Count(string(got), "\n") != len(rep.Cases) {
				t.Errorf("partial cases.jsonl (%v): %d lines, want %d", err, strings.Count(string(got), "\n"), len(rep.Cases))
			}
			done := map[string]bool{}
			for _, c := range rep.Cases {
				done[c.ID] = true
			}
			for _, c := range cases {
				if named := strings.Contains(string(note), "\n"+c.ID+"\n"); named == done[c.ID] {
					t.Errorf("note and cases disagree on %s (completed %v):\n%s", c.ID, done[c.ID], note)
				}
			}
			t.Logf("%d of %d cases kept in %s", len(rep.Cases), len(cases), partial)
		})
	}
}
