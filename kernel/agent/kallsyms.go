package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// kallsyms is /proc/kallsyms, read once per boot (it takes ~20 s on arm64 under TCG).
type kallsyms struct {
	byName map[string]uint64
	byAddr map[uint64]string
	dups   map[string]bool // names defined more than once (static functions)
}

func readKallsyms() (*kallsyms, error) {
	t0 := time.Now()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	k := &kallsyms{byName: map[string]uint64{}, byAddr: map[uint64]string{}, dups: map[string]bool{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	zero := 0
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			continue
		}
		a, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil {
			continue
		}
		if a == 0 {
			zero++
			continue
		}
		name := fs[2]
		if _, ok := k.byName[name]; ok {
			k.dups[name] = true
		} else {
			k.byName[name] = a
		}
		// Prefer global names for reverse lookups.
		if _, ok := k.byAddr[a]; !ok || (fs[1] == "T" || fs[1] == "D") {
			k.byAddr[a] = name
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(k.byName) == 0 {
		return nil, fmt.Errorf("/proc/kallsyms has no addresses (%d zero entries): kptr_restrict?", zero)
	}
	logf("kallsyms: %d symbols in %.1fs", len(k.byName), time.Since(t0).Seconds())
	return k, nil
}

func (k *kallsyms) addr(name string) (uint64, error) {
	a, ok := k.byName[name]
	if !ok {
		return 0, fmt.Errorf("%s is not in /proc/kallsyms", name)
	}
	return a, nil
}
