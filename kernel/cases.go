package kernel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/trampjit/trampjit/jit"
)

// ReadCases reads capture cases from a file: a JSON array of cases, or one case per line
// (JSON lines; blank lines and lines starting with # or // are skipped). The file may hold
// MaxCasesFileSize bytes and MaxCases cases.
func ReadCases(path string) ([]Case, error) {
	data, err := ReadFileLimit(path, "cases file", MaxCasesFileSize)
	if err != nil {
		return nil, err
	}
	cs, err := parseCases(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

// ParseCases is ReadCases on a reader.
func ParseCases(r io.Reader) ([]Case, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxCasesFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxCasesFileSize {
		return nil, fmt.Errorf("larger than the %s limit of a cases file", sizeString(MaxCasesFileSize))
	}
	return parseCases(data)
}

func parseCases(data []byte) ([]Case, error) {
	var cases []Case
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cases); err != nil {
			return nil, err
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for n := 1; sc.Scan(); n++ {
			l := bytes.TrimSpace(sc.Bytes())
			if len(l) == 0 || l[0] == '#' || bytes.HasPrefix(l, []byte("//")) {
				continue
			}
			var c Case
			dec := json.NewDecoder(bytes.NewReader(l))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			cases = append(cases, c)
			if len(cases) > MaxCases {
				return nil, fmt.Errorf("line %d: more than %d cases", n, MaxCases)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return cases, validateCases(cases)
}

func validateCases(cases []Case) error {
	if len(cases) > MaxCases {
		return fmt.Errorf("%d cases: at most %d", len(cases), MaxCases)
	}
	seen := map[string]bool{}
	for i, c := range cases {
		if c.ID == "" || seen[c.ID] {
			return fmt.Errorf("case %d: id %q is empty or used twice", i+1, c.ID)
		}
		seen[c.ID] = true
		if c.Func == "" {
			return fmt.Errorf("case %s: no func", c.ID)
		}
		if c.Target != "" && c.Target != "bpf" {
			return fmt.Errorf("case %s: target %q (want \"\" for a kernel function, or \"bpf\")", c.ID, c.Target)
		}
		if len(c.Progs) > MaxCaseProgs {
			return fmt.Errorf("case %s: %d programs: at most %d (the kernel refuses more than BPF_MAX_TRAMP_LINKS = 38 with -E2BIG)", c.ID, len(c.Progs), MaxCaseProgs)
		}
		if so := c.StructOps; so != nil {
			if so.Ops == "" || so.Member == "" || so.Map < 1 {
				return fmt.Errorf("case %s: struct_ops: ops, member and map (1, 2, ...) are required", c.ID)
			}
			if len(c.Progs) != 1 || c.Progs[0].Kind != jit.StructOpsProg {
				return fmt.Errorf("case %s: a struct_ops case has exactly one program, of kind struct_ops", c.ID)
			}
			continue
		}
		for j, p := range c.Progs {
			switch p.Kind {
			case jit.Fentry, jit.Fexit, jit.ModRet, jit.LSM, jit.Fsession:
			default:
				return fmt.Errorf("case %s: program %d: kind %q (want fentry, fexit, fmod_ret, lsm or fsession)", c.ID, j+1, p.Kind)
			}
			if p.SessionCookie && p.Kind != jit.Fsession {
				return fmt.Errorf("case %s: program %d: session_cookie is for fsession programs (bpf_session_cookie), not %s", c.ID, j+1, p.Kind)
			}
		}
	}
	return nil
}
