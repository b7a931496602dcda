package kernel

import (
	"github.com/trampjit/trampjit/btfmodel"
	"github.com/trampjit/trampjit/jit"
)

// This file is the part of the corpus comparison that also serves one request generated
// several ways (trampjit compare): decoding a model image into labelled instructions, and
// the section-by-section alignment CompareCorpora uses for a case that differs.

// ImageInsns decodes a generated image into instructions (arm64 address loads as one, as
// CompareCorpora decodes them), each labelled with the image's section at its offset.
func ImageInsns(arch btfmodel.Arch, img *jit.Image, syms map[uint64]string) ([]Insn, error) {
	insns, err := decodeImage(arch, img.Code, img.Base, syms)
	if err != nil {
		return nil, err
	}
	for i := range insns {
		insns[i].Section = sectionAtOffset(img, insns[i].Offset)
	}
	return insns, nil
}

// AlignSections sets two labelled instruction lists of one architecture side by side,
// section by section, compared modulo embedded addresses: the rows CompareCorpora reports
// for a case whose images differ (CaseDiff.Sections), Differs marking an instruction the
// other list does not have there.
func AlignSections(a, b []Insn) []SectionDiff { return sectionDiffs(a, b) }

// Refusal is a refused case's errno and the kernel's message, as CompareCorpora reports it;
// "" when the kernel built an image.
func (c *CorpusCase) Refusal() string { return refusal(c) }
