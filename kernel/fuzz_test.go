package kernel

import (
	"strings"
	"testing"
)

// FuzzParseCases feeds capture case files (JSON arrays or JSON lines) to the parser.
func FuzzParseCases(f *testing.F) {
	f.Add(`[{"id":"a","func":"bpf_fentry_test2","progs":[{"kind":"fentry"},{"kind":"fexit","cookie":"-1"}]}]`)
	f.Add("# comment\n{\"id\":\"b\",\"func\":\"tj_args2\",\"target\":\"bpf\",\"run\":true,\"progs\":[{\"kind\":\"fentry\"}]}\n")
	f.Add(`{"id":"c","func":"f","progs":[{"kind":"kprobe"}]}`)
	f.Add(`[{"id":"d"},{"id":"d"}]`)
	f.Fuzz(func(t *testing.T, doc string) {
		cases, err := ParseCases(strings.NewReader(doc))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range cases {
			if c.ID == "" || seen[c.ID] || c.Func == "" {
				t.Fatalf("accepted an invalid case %+v", c)
			}
			seen[c.ID] = true
		}
	})
}
