package kernel

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/trampjit/trampjit/kernel/wire"
)

// soResult is what the agent reports for one member of a table case.
func soResult(id, ops, member string, index int) wire.CaptureResult {
	return wire.CaptureResult{ID: id, Func: ops + "." + member, StructOps: &wire.StructOpsResult{Index: index}}
}

// A table is sent whole and comes back as the guest's members: sched_ext_ops_cid as 7.3.4's
// BTF has it (cgroup_* renamed cpuctl_*, sub_caps_updated added), with the catalogue's
// recipe; members only the catalogue lists are dropped; --only still selects.
func TestStructOpsPlanExpand(t *testing.T) {
	cat := StructOpsCatalog("7.2", "amd64")
	for _, tc := range []struct {
		only     string
		discover bool
		want     []string
	}{
		{"struct_ops-*", true, []string{"struct_ops-sched_ext_ops_cid-enqueue", "struct_ops-sched_ext_ops_cid-cpuctl_init", "struct_ops-sched_ext_ops_cid-sub_caps_updated", "struct_ops-sched_ext_ops_cid-init", "struct_ops-new_ops-op"}},
		{"struct_ops-sched_ext_ops_cid-*", false, []string{"struct_ops-sched_ext_ops_cid-enqueue", "struct_ops-sched_ext_ops_cid-cpuctl_init", "struct_ops-sched_ext_ops_cid-sub_caps_updated", "struct_ops-sched_ext_ops_cid-init"}},
		{"struct_ops-sched_ext_ops_cid-init,struct_ops-sched_ext_ops_cid-cpuctl_*", false, []string{"struct_ops-sched_ext_ops_cid-cpuctl_init", "struct_ops-sched_ext_ops_cid-init"}},
	} {
		only, err := ParseOnly(tc.only)
		if err != nil {
			t.Fatal(err)
		}
		var sel []Case
		for _, c := range cat {
			if only.Match(c.ID) && c.StructOps.Ops == "sched_ext_ops_cid" {
				sel = append(sel, c)
			}
		}
		sent, plan := planStructOps(sel, only, "7.2", "amd64")
		var ids []string
		for _, c := range sent {
			ids = append(ids, c.ID)
		}
		wantSent := []string{"struct_ops-sched_ext_ops_cid"}
		if tc.discover {
			wantSent = append(wantSent, discoverID)
		}
		if !reflect.DeepEqual(ids, wantSent) {
			t.Fatalf("--only %s: sent %v, want %v", tc.only, ids, wantSent)
		}
		if so := sent[0].StructOps; so.Member != "" || so.Data["name"] != "tj_scx_cid" || len(so.Sleepable) == 0 {
			t.Errorf("table case %+v: want the recipe, no member", so)
		}
		if tc.discover {
			d := sent[1].StructOps
			if !strings.Contains(strings.Join(d.Except, ","), "sched_ext_ops_cid") || len(d.Recipes) != 1 || d.Recipes[0].Ops != "hid_bpf_ops" {
				t.Errorf("discovery case %+v: want every 7.2 amd64 table excepted, hid_bpf_ops's recipe", d)
			}
		}
		p := "struct_ops-sched_ext_ops_cid-"
		results := map[string]wire.CaptureResult{
			"struct_ops-sched_ext_ops_cid": {ID: "struct_ops-sched_ext_ops_cid"},
			p + "init":                     soResult(p+"init", "sched_ext_ops_cid", "init", 36),
			p + "cpuctl_init":              soResult(p+"cpuctl_init", "sched_ext_ops_cid", "cpuctl_init", 21),
			p + "enqueue":                  soResult(p+"enqueue", "sched_ext_ops_cid", "enqueue", 1),
			p + "sub_caps_updated":         soResult(p+"sub_caps_updated", "sched_ext_ops_cid", "sub_caps_updated", 31),
			"struct_ops-new_ops-op":        soResult("struct_ops-new_ops-op", "new_ops", "op", 0),
		}
		var got []string
		for _, c := range plan.expand(sel, results, io.Discard) {
			got = append(got, c.ID)
			if c.StructOps == nil || c.StructOps.Member == "" || c.Func != c.StructOps.Ops+"."+c.StructOps.Member {
				t.Errorf("%s: %+v", c.ID, c.StructOps)
			}
			if c.ID == p+"init" && !c.Progs[0].Sleepable {
				t.Errorf("%s: the recipe loads init sleepable", c.ID)
			}
			if c.ID == "struct_ops-new_ops-op" && !c.StructOps.Link {
				t.Errorf("%s: a table without a recipe is one BPF_F_LINK map", c.ID)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--only %s: cases %v, want %v", tc.only, got, tc.want)
		}
	}
}

// A table whose map could not be built reports no member: each catalogue member gets its error.
func TestStructOpsExpandTableError(t *testing.T) {
	var sel []Case
	for _, c := range StructOpsCatalog("7.2", "amd64") {
		if c.StructOps.Ops == "io_uring_bpf_ops" {
			sel = append(sel, c)
		}
	}
	_, plan := planStructOps(sel, nil, "7.2", "amd64")
	results := map[string]wire.CaptureResult{"struct_ops-io_uring_bpf_ops": {ID: "struct_ops-io_uring_bpf_ops", Stage: "load", Error: "BTF struct io_uring_bpf_ops: not found"}}
	out := plan.expand(sel, results, io.Discard)
	if len(out) != 1 || results[out[0].ID].Error == "" || results[out[0].ID].ID != out[0].ID {
		t.Errorf("cases %v, results %v", out, results)
	}
}
