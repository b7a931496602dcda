package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// AgentEnv names an environment variable that overrides the agent binary per architecture
// (TRAMPJIT_AGENT_AMD64, TRAMPJIT_AGENT_ARM64, TRAMPJIT_AGENT_RISCV64), for installs without
// the source tree.
const AgentEnv = "TRAMPJIT_AGENT_"

// BuildAgent builds the static guest agent for arch (CGO_ENABLED=0, GOARCH=arch) from the
// source tree this package was built from, into dir, and returns the binary's path.
func BuildAgent(ctx context.Context, arch, dir string) (string, error) {
	if p := os.Getenv(AgentEnv + upper(arch)); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s%s: %w", AgentEnv, upper(arch), err)
		}
		return p, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go toolchain not found: it is needed to build the guest agent (or set %s%s)", AgentEnv, upper(arch))
	}
	src, err := agentSource(ctx, gobin)
	if err != nil {
		return "", fmt.Errorf("%v (set %s%s to a prebuilt agent)", err, AgentEnv, upper(arch))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "agent-"+arch)
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the guest agent for %s: %v: %s", arch, err, errb.String())
	}
	return out, nil
}

// agentSource finds kernel/agent: beside this file when built from a source tree, else
// through the module containing the working directory.
func agentSource(ctx context.Context, gobin string) (string, error) {
	if _, self, _, ok := runtime.Caller(0); ok && filepath.IsAbs(self) {
		src := filepath.Join(filepath.Dir(self), "..", "agent")
		if _, err := os.Stat(filepath.Join(src, "main.go")); err == nil {
			return src, nil
		}
	}
	out, err := exec.CommandContext(ctx, gobin, "list", "-f", "{{.Dir}}", agentPkg).Output()
	if err != nil {
		return "", fmt.Errorf("agent source not found (not beside the binary's source, and go list %s failed: %v)", agentPkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}

const agentPkg = "github.com/trampjit/trampjit/kernel/agent"

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
