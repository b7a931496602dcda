//go:build cgo

package unicorn

// #include "shim.h"
import "C"

// FastStores takes [begin, end) out of the always-on C hook that records
// invalid accesses, so that stores there take libunicorn 2.1's fast path.
// Unicorn sends every store to a page through its slow path (two memory
// region look-ups, ~40 ns) while any invalid-access hook covers the page
// (uc_mem_hook_installed in notdirty_write), so a hook over all of memory
// made every push and stack store slow. Give it a writable, non-executable
// region, such as a stack: the only invalid access it can see is a fetch,
// which Unicorn stops at the fetched address, so Exit still reports it as a
// FetchProt fault at that address. A second call replaces the first range;
// begin == end restores the hook everywhere. On 2.0 it changes nothing
// measurable (every store is slow there) and costs nothing.
func (e *Engine) FastStores(begin, end uint64) error {
	if e.uc == nil {
		return ErrClosed
	}
	if end < begin || (begin != end && (begin%PageSize != 0 || end%PageSize != 0)) {
		return &Error{Op: "fast_stores", Code: ErrArg, Msg: rangeMsg(begin, end-begin)}
	}
	for _, h := range e.faults {
		if err := check("hook_del", C.uc_hook_del(e.uc, h)); err != nil {
			return err
		}
	}
	e.faults, e.quiet = nil, [2]uint64{}
	ranges := [][2]uint64{{1, 0}} // everywhere
	if begin != end {
		ranges = nil
		if begin > 0 {
			ranges = append(ranges, [2]uint64{0, begin - 1})
		}
		if end != 0 {
			ranges = append(ranges, [2]uint64{end, ^uint64(0)})
		}
		e.quiet = [2]uint64{begin, end}
	}
	for _, r := range ranges {
		var hh C.uc_hook
		if err := check("hook_add", C.tj_hook_fault(e.uc, e.st, &hh, C.uint64_t(r[0]), C.uint64_t(r[1]))); err != nil {
			return err
		}
		e.faults = append(e.faults, hh)
	}
	return nil
}

// quietFault is the fault a run that failed with code rc at pc met in the
// FastStores range, where no hook recorded it: a fetch, at pc.
func (e *Engine) quietFault(rc Code, pc uint64) *Fault {
	if rc != ErrFetchProt || pc < e.quiet[0] || pc >= e.quiet[1] {
		return nil
	}
	return &Fault{Kind: FetchProt, Addr: pc, Size: 1, PC: pc}
}
