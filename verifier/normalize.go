package verifier

import "strings"

// NormalizeLine sets aside what legitimately differs between two loads of equivalent programs
// (instruction indexes, register numbers, BTF ids), so that the model's and the kernel's
// messages can be compared.
func NormalizeLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' && (i == 0 || !isWordByte(s[i-1]) || s[i-1] == 'R' || s[i-1] == 'r') {
			b.WriteByte('#')
			for i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
				i++
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
