package btfmodel

import (
	"strings"
	"testing"
)

// A misspelt function gets the nearest names the kernel's BTF really has.
func TestFuncByNameSuggests(t *testing.T) {
	spec := loadSpec(t, "6.12-amd64")
	_, err := FuncByName(spec, "tcp_v4_conect")
	if err == nil || !strings.Contains(err.Error(), "function tcp_v4_conect not found in BTF (did you mean tcp_v4_connect") {
		t.Errorf("got %v", err)
	}
	_, err = FuncByName(spec, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a name far from every function: got %v", err)
	}
}
