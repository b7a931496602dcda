package verifier

import (
	"os"
	"testing"
)

// FuzzParseJSON feeds instruction-list documents to the parser: it must return programs or
// an error, never panic, and what it returns must be checkable.
func FuzzParseJSON(f *testing.F) {
	if data, err := os.ReadFile("../testdata/verifier/asm.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"programs":[{"name":"p","section":"fentry/bpf_fentry_test1","license":"GPL","insns":["r0 = 0","exit"]}]}`))
	f.Add([]byte(`{"programs":[{"name":"p","section":"lsm/file_open","insns":["out:","if r1 == 0x0 goto out","r1 = map[m]","exit"],"maps":[{"name":"m","type":"array","key_size":4,"value_size":8,"max_entries":1}]}]}`))
	f.Add([]byte(`{"programs":[{"name":"p","section":"fexit/x","insns":["0: (79) r2 = *(u64 *)(r1 +8)","b7000000 00000000","exit"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		progs, err := ParseJSON(data)
		if err != nil {
			return
		}
		for _, p := range progs {
			if p.Name == "" && len(p.Instructions) == 0 {
				continue
			}
			_ = Check(p, Env{Kernel: "6.12", Arch: "amd64"})
		}
	})
}
