package kernel

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/trampjit/trampjit/jit"
	"github.com/trampjit/trampjit/kernel/wire"
)

// A struct_ops table is captured whole: the catalogue's member cases of one (ops, map) go to
// the guest as one table case (Member ""), and the agent reports every function-pointer
// member the guest's BTF has, listed in the catalogue or not (a kernel newer than the
// profile renames and adds members). Tables the catalogue does not list at all are found by
// a discovery case (Ops ""). The results become member cases again, ids as the catalogue
// makes them (struct_ops-<ops>[.<map>]-<member>), selected by the same --only.

// discoverID is the discovery case's id: no member case can have it.
const discoverID = "struct_ops-*"

// soPlan is how a capture's struct_ops cases were sent.
type soPlan struct {
	only   *Only
	tables map[string][]Case // table case id -> the catalogue's member cases of it
	// recipes are the tables a discovery case may find, by ops (map 1).
	recipes map[string]wire.StructOpsCase
}

// tableID is the id of the table case a member case belongs to: its id without "-<member>".
func tableID(c Case) string { return strings.TrimSuffix(c.ID, "-"+c.StructOps.Member) }

// planStructOps turns the member cases into table cases, in place of each table's first
// member, and adds a discovery case when the selection takes in tables not named yet
// (--only "", '*', 'struct_ops-*'): every table of the profile's catalogue is known to it,
// the others the catalogue has a recipe for are passed as recipes.
func planStructOps(cases []Case, only *Only, kernel, arch string) ([]Case, *soPlan) {
	p := &soPlan{only: only, tables: map[string][]Case{}, recipes: map[string]wire.StructOpsCase{}}
	var out []Case
	hasSO := false
	for _, c := range cases {
		so := c.StructOps
		if so == nil || so.Member == "" || so.Ops == "" {
			out = append(out, c)
			continue
		}
		hasSO = true
		id := tableID(c)
		if _, ok := p.tables[id]; !ok {
			t := *so
			t.Member = ""
			out = append(out, Case{ID: id, Func: so.Ops, Progs: []jit.Prog{{Kind: jit.StructOpsProg}}, StructOps: &t})
		}
		p.tables[id] = append(p.tables[id], c)
	}
	if !hasSO || !only.Match("struct_ops-\x01-\x01") {
		return out, p
	}
	d := &wire.StructOpsCase{}
	profile := map[string]bool{}
	for _, t := range structOpsTables(kernel, arch) {
		profile[t.ops] = true
		d.Except = append(d.Except, t.ops)
	}
	if skip := structOpsSkipped(kernel); skip != "" {
		d.Except = append(d.Except, skip)
	}
	var names []string
	for ops := range structOpsRecipes {
		names = append(names, ops)
	}
	sort.Strings(names)
	for _, ops := range names {
		if !profile[ops] {
			r := structOpsWire(ops, 1)
			d.Recipes = append(d.Recipes, r)
			p.recipes[ops] = r
		}
	}
	out = append(out, Case{ID: discoverID, Func: "struct_ops", Progs: []jit.Prog{{Kind: jit.StructOpsProg}}, StructOps: d})
	return out, p
}

// expand turns the agent's results back into member cases, in the order of cases: each
// table's members where its first member was, in index order; the discovered tables last.
// A member the catalogue lists but the guest's BTF has not is dropped (with a line on
// progress); when the whole table failed, each catalogue member gets the table's result.
func (p *soPlan) expand(cases []Case, results map[string]wire.CaptureResult, progress io.Writer) []Case {
	var out []Case
	done := map[string]bool{}
	for _, c := range cases {
		if c.StructOps == nil || c.StructOps.Member == "" {
			out = append(out, c)
			continue
		}
		id := tableID(c)
		if done[id] {
			continue
		}
		done[id] = true
		cat := p.tables[id]
		got := p.members(id, results)
		if len(got) == 0 {
			// No member reported: the table's own result (its error, or the guest's) is each one's.
			tr, ok := results[id]
			for _, m := range cat {
				if ok {
					r := tr
					r.ID, r.Func = m.ID, m.Func
					results[m.ID] = r
				}
				out = append(out, m)
			}
			continue
		}
		listed := map[string]Case{}
		for _, m := range cat {
			listed[m.ID] = m
		}
		for _, r := range got {
			m, ok := listed[r.ID]
			if !ok {
				m = memberCase(*cat[0].StructOps, r)
			}
			delete(listed, r.ID)
			out = append(out, m)
		}
		for _, m := range cat {
			if _, gone := listed[m.ID]; gone {
				fmt.Fprintf(progress, "case %s: struct %s has no function-pointer member %s in this kernel's BTF: not captured\n", m.ID, m.StructOps.Ops, m.StructOps.Member)
			}
		}
	}
	// Discovered tables: every result of a table no table case sent.
	byOps := map[string][]wire.CaptureResult{}
	for id, r := range results {
		ops, _, ok := strings.Cut(r.Func, ".")
		if !ok || r.StructOps == nil || !strings.HasPrefix(id, "struct_ops-"+ops+"-") || done["struct_ops-"+ops] || !p.only.Match(id) {
			continue
		}
		byOps[ops] = append(byOps[ops], r)
	}
	var found []string
	for ops := range byOps {
		found = append(found, ops)
	}
	sort.Strings(found)
	for _, ops := range found {
		rs := byOps[ops]
		sort.Slice(rs, func(i, j int) bool { return rs[i].StructOps.Index < rs[j].StructOps.Index })
		recipe, ok := p.recipes[ops]
		if !ok {
			recipe = wire.StructOpsCase{Ops: ops, Map: 1, Link: true}
		}
		fmt.Fprintf(progress, "struct_ops table %s: not in the catalogue, %d members captured\n", ops, len(rs))
		for _, r := range rs {
			out = append(out, memberCase(recipe, r))
		}
	}
	return out
}

// members are the results the agent reported for table case id, selected by --only, in
// member index order.
func (p *soPlan) members(id string, results map[string]wire.CaptureResult) []wire.CaptureResult {
	var got []wire.CaptureResult
	for rid, r := range results {
		if strings.HasPrefix(rid, id+"-") && r.StructOps != nil && p.only.Match(rid) {
			got = append(got, r)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].StructOps.Index < got[j].StructOps.Index })
	return got
}

// memberCase is the case of a member the agent reported under a table's recipe.
func memberCase(recipe wire.StructOpsCase, r wire.CaptureResult) Case {
	_, member, _ := strings.Cut(r.Func, ".")
	so := recipe
	so.Member, so.Except, so.Recipes = member, nil, nil
	p := jit.Prog{Kind: jit.StructOpsProg, Sleepable: contains(so.Sleepable, member)}
	return Case{ID: r.ID, Func: r.Func, Progs: []jit.Prog{p}, StructOps: &so}
}

// caseWeight is what a case counts for in a boot's timeout: a table case stands for its
// members, a discovery case for the tables it may find.
func caseWeight(cases []Case) int {
	n := 0
	for _, c := range cases {
		switch so := c.StructOps; {
		case so != nil && so.Ops == "":
			n += 40
		case so != nil && so.Member == "":
			n += 20
		default:
			n++
		}
	}
	return n
}
