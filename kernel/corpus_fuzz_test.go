package kernel

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// FuzzParseCorpus feeds cases.jsonl documents, requests unvalidated, through the reader and
// then through Diff, which must never panic on a case the reader accepted. The seeds are
// real cases of the corpus (with their BTF reference rewritten to a prototype, so the fuzzer
// does not spend its time loading vmlinux).
func FuzzParseCorpus(f *testing.F) {
	fh, err := os.Open("../testdata/kernel/6.12-amd64/cases.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 16<<20)
	for n := 0; sc.Scan() && n < 6; n++ {
		line := strings.Replace(sc.Text(), `"btf":"vmlinux.btf.xz","func":"bpf_fentry_test1"`, `"proto":"int bpf_fentry_test1(int a)"`, 1)
		f.Add(line)
	}
	f.Add(`{"id":"x","request":{"arch":"arm64","kernel":"6.1","proto":"int f(int a, long b)","target":"bpf","progs":[{"kind":"fexit"}],"addrs":{"image":"0x1000","func":"0x2000","progs":[{"prog":"0x1","bpf_func":"0x2"}]}},"error":"x","errno":"ENOTSUPP"}`)
	f.Fuzz(func(t *testing.T, doc string) {
		cases, err := ParseCorpus(strings.NewReader(doc), "cases.jsonl", t.TempDir())
		if err != nil {
			return
		}
		for i := range cases {
			if cases[i].Request.BTF != "" {
				continue // a file path: not the fuzzer's business
			}
			Diff(&cases[i])
		}
	})
}
