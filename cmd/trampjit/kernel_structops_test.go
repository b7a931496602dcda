package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/kernel"
)

// TestKernelCasesStructOps: the catalogue lists one case per member of each table, --only
// selects them by id, and --merge needs -o.
func TestKernelCasesStructOps(t *testing.T) {
	code, out, e := trampjit("kernel", "cases", "--kernel", "7.2", "--arch", "amd64", "--only", "struct_ops-tcp_congestion_ops-*,struct_ops-tcp_congestion_ops.2-cong_avoid")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var c kernel.Case
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if c.StructOps == nil || c.Func != c.StructOps.Ops+"."+c.StructOps.Member || len(c.Progs) != 1 || c.Progs[0].Kind != "struct_ops" {
			t.Errorf("case %s: %+v", c.ID, c)
		}
		ids = append(ids, c.ID)
	}
	// 7.2's tcp_congestion_ops has 14 function members, cwnd_event_tx_start among them.
	if len(ids) != 15 || ids[0] != "struct_ops-tcp_congestion_ops-cong_avoid" || ids[14] != "struct_ops-tcp_congestion_ops.2-cong_avoid" || !strings.Contains(strings.Join(ids, " "), "cwnd_event_tx_start") {
		t.Errorf("ids %v", ids)
	}
	if code, _, e := trampjit("kernel", "capture", "--kernel", "6.12", "--arch", "amd64", "--only", "struct_ops-*", "--merge"); code != 2 || !strings.Contains(e, "--merge adds cases to the corpus in -o DIR") {
		t.Errorf("--merge without -o: exit %d, %q", code, e)
	}
}
