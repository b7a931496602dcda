package verifier

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trampjit/trampjit/btfmodel"
)

// jsonFile is the JSON input format documented in doc.go.
type jsonFile struct {
	Programs []jsonProgram `json:"programs"`
}

type jsonProgram struct {
	Name       string   `json:"name"`
	Section    string   `json:"section"`
	AttachType string   `json:"attach_type,omitempty"`
	Target     string   `json:"target,omitempty"`
	Sleepable  bool     `json:"sleepable,omitempty"`
	License    string   `json:"license"`
	Maps       []Map    `json:"maps,omitempty"`
	Insns      []string `json:"insns"`
}

// Bounds on a JSON instruction list. A program longer than BPF_COMPLEXITY_LIMIT_INSNS is
// refused by bpf_prog_load with E2BIG before the verifier runs (privileged loaders; others
// get BPF_MAXINSNS, 4096).
const (
	MaxJSONSize     = 64 << 20
	MaxJSONPrograms = 4096
	MaxProgInsns    = 1_000_000
)

// ParseJSON reads programs in the JSON instruction-list format (see doc.go).
func ParseJSON(data []byte) ([]Program, error) {
	if len(data) > MaxJSONSize {
		return nil, fmt.Errorf("verifier JSON: %d MiB, more than the %d MiB an instruction list may have", len(data)>>20, MaxJSONSize>>20)
	}
	var f jsonFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("verifier JSON: %w", err)
	}
	if len(f.Programs) == 0 {
		return nil, fmt.Errorf("verifier JSON: no programs")
	}
	if len(f.Programs) > MaxJSONPrograms {
		return nil, fmt.Errorf("verifier JSON: %d programs, at most %d in one file", len(f.Programs), MaxJSONPrograms)
	}
	var out []Program
	for i, jp := range f.Programs {
		where := fmt.Sprintf("program %d (%s)", i, jp.Name)
		p := Program{Name: jp.Name, Section: jp.Section, Target: jp.Target, Sleepable: jp.Sleepable,
			License: jp.License, Maps: jp.Maps}
		if jp.AttachType == string(btfmodel.StructOps) {
			// target "OPS:MEMBER", as in a struct_ops/OPS:MEMBER section
			if ops, member, ok := strings.Cut(jp.Target, ":"); !ok || ops == "" || member == "" {
				return nil, fmt.Errorf("%s: struct_ops target %q: want OPS:MEMBER", where, jp.Target)
			}
			p.AttachType = btfmodel.StructOps
		} else if jp.AttachType != "" {
			at, err := btfmodel.ParseAttachType(jp.AttachType)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			p.AttachType = at
		}
		if p.Section != "" {
			if _, _, _, err := ParseSection(p.Section); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		} else if p.AttachType == "" || p.Target == "" {
			return nil, fmt.Errorf("%s: needs a section, or attach_type and target", where)
		}
		if len(jp.Insns) > MaxProgInsns {
			return nil, fmt.Errorf("%s: %d instructions: the kernel loads at most %d (BPF_COMPLEXITY_LIMIT_INSNS) and fails with E2BIG", where, len(jp.Insns), MaxProgInsns)
		}
		for _, m := range jp.Maps {
			// Data is the value of key 0: BPF_MAP_UPDATE_ELEM copies exactly value_size bytes.
			if len(m.Data) > int(m.ValueSize) {
				return nil, fmt.Errorf("%s: map %q: data is %d bytes, more than its value_size %d", where, m.Name, len(m.Data), m.ValueSize)
			}
		}
		insns, err := ParseInstructions(jp.Insns, jp.Maps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		p.Instructions = insns
		out = append(out, p)
	}
	return out, nil
}
