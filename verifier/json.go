package verifier

import (
	"bytes"
	"encoding/json"
	"fmt"

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

// ParseJSON reads programs in the JSON instruction-list format (see doc.go).
func ParseJSON(data []byte) ([]Program, error) {
	var f jsonFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("verifier JSON: %w", err)
	}
	if len(f.Programs) == 0 {
		return nil, fmt.Errorf("verifier JSON: no programs")
	}
	var out []Program
	for i, jp := range f.Programs {
		where := fmt.Sprintf("program %d (%s)", i, jp.Name)
		p := Program{Name: jp.Name, Section: jp.Section, Target: jp.Target, Sleepable: jp.Sleepable,
			License: jp.License, Maps: jp.Maps}
		if jp.AttachType != "" {
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
		insns, err := ParseInstructions(jp.Insns, jp.Maps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		p.Instructions = insns
		out = append(out, p)
	}
	return out, nil
}
