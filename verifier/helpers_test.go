package verifier

import (
	"testing"

	"github.com/cilium/ebpf/asm"
)

// Helper calls (check_helper_call, each helper's bpf_func_proto): availability per profile,
// argument rules, results.
func TestHelpers(t *testing.T) {
	const (
		R0, R1, R2, R3, R4, R6, R10 = asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R6, asm.R10
		DW, W, B                    = asm.DWord, asm.Word, asm.Byte
	)
	f1 := "fentry/bpf_fentry_test1"
	hash := []Map{{Name: "h", Type: "hash", KeySize: 4, ValueSize: 8, MaxEntries: 16}}
	fp := func(r asm.Register, off int32) []asm.Instruction { return []asm.Instruction{mov(r, R10), addi(r, off)} }
	cat := func(parts ...[]asm.Instruction) func(string) asm.Instructions {
		var out asm.Instructions
		for _, p := range parts {
			out = append(out, p...)
		}
		return fixed(ret0(out...)...)
	}
	one := func(ins ...asm.Instruction) []asm.Instruction { return ins }
	cases := []vcase{
		// bpf_get_func_* and friends: trampoline programs only, ctx in R1.
		{name: "get-func-arg-cnt", sec: f1, prog: cat(one(call(asm.FnGetFuncArgCnt))), want: "ok"},
		{name: "get-func-arg-cnt-lsm", sec: "lsm/file_open", prog: cat(one(call(asm.FnGetFuncArgCnt))), want: "ok"},
		{name: "get-func-arg", sec: "fexit/bpf_fentry_test2", prog: cat(one(st(R10, -8, 0, DW), movi(R2, 1)), fp(R3, -8), one(call(asm.FnGetFuncArg))), want: "ok"},
		{name: "get-func-arg-uninit", sec: f1, prog: cat(one(movi(R2, 0)), fp(R3, -8), one(call(asm.FnGetFuncArg))),
			want: "ok"}, // Debian's 6.1 has the fixed-size uninit memory backport (asm.json j_func_arg_uninit)
		{name: "get-func-arg-scalar", sec: f1, prog: cat(one(movi(R2, 0), movi(R3, 0), call(asm.FnGetFuncArg))),
			want61: "R3 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, alloc_mem, buf",
			want:   "R3 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_"},
		{name: "get-func-arg-misaligned", sec: f1, prog: cat(one(st(R10, -16, 0, DW), st(R10, -8, 0, DW), movi(R2, 0)), fp(R3, -12), one(call(asm.FnGetFuncArg))),
			want61: "misaligned stack access off (0x0; 0x0)+-12+0 size 8", want: "misaligned stack access off 0+-12+0 size 8"},
		{name: "get-func-ret", sec: "fexit/bpf_fentry_test1", prog: cat(one(st(R10, -8, 0, DW)), fp(R2, -8), one(call(asm.FnGetFuncRet))), want: "ok"},
		{name: "get-func-ip", sec: f1, prog: cat(one(call(asm.FnGetFuncIp))), want: "ok"},
		{name: "get-func-ip-lsm", sec: "lsm/file_open", prog: cat(one(call(asm.FnGetFuncIp))), want: "func bpf_get_func_ip#173 not supported for program type 29"},
		{name: "get-attach-cookie", sec: "fmod_ret/security_file_open", prog: cat(one(call(asm.FnGetAttachCookie))), want: "ok"},
		{name: "helper-modified-ctx", sec: f1, prog: cat(one(addi(R1, 8), call(asm.FnGetFuncArgCnt))), want: "dereference of modified ctx ptr R1 off=8 disallowed"},
		{name: "helper-ctx-wrong-type", sec: f1, prog: cat(one(mov(R1, R10), call(asm.FnGetFuncArgCnt))), want: "R1 type=fp expected=ctx"},
		{name: "helper-clobbers-args", sec: f1, prog: cat(one(call(asm.FnKtimeGetNs), call(asm.FnGetFuncArgCnt))), want: "R1 !read_ok"},
		{name: "helper-result-scalar", sec: f1, prog: cat(one(call(asm.FnKtimeGetNs), ldx(R2, R0, 0, DW))), want: "R0 invalid mem access 'scalar'"},
		// Availability.
		{name: "unknown-to-tracing", sec: f1, prog: cat(one(call(asm.FnSkbLoadBytes))),
			want61: "unknown func bpf_skb_load_bytes#26", want: "program of this type cannot use helper bpf_skb_load_bytes#26"},
		{name: "out-of-range-id", sec: f1, prog: cat(one(asm.BuiltinFunc(300).Call())), want: "invalid func unknown#300"},
		{name: "id-past-6.1", sec: f1, prog: cat(one(call(asm.FnCgrpStorageGet))),
			// 6.12+ offers it to tracing programs (storage.bpf.c st_cgrp_wrong_owner on the kernels)
			want61: "invalid func unknown#210", want: "R1 type=ctx expected=map_ptr"},
		{name: "sleepable-copy-from-user", sec: "fentry.s/bpf_fentry_test1", errInj: map[string][]string{"6.1": {"bpf_fentry_test1"}}, prog: cat(fp(R1, -8), one(movi(R2, 8), movi(R3, 0), call(asm.FnCopyFromUser))), want: "ok"},
		// GPL-only helpers.
		{name: "probe-read-non-gpl", sec: f1, license: "Proprietary", prog: cat(fp(R1, -8), one(movi(R2, 8), movi(R3, 0), call(asm.FnProbeReadKernel))),
			want: "cannot call GPL-restricted function from non-GPL compatible program"},
		{name: "ktime-non-gpl", sec: f1, license: "Proprietary", prog: cat(one(call(asm.FnKtimeGetNs))), want: "ok"},
		// bpf_probe_read_kernel: uninit memory + size (check_mem_size_reg).
		{name: "probe-read", sec: f1, prog: cat(fp(R1, -16), one(movi(R2, 16), movi(R3, 0), call(asm.FnProbeReadKernel), ldx(R4, R10, -16, DW))), want: "ok"},
		{name: "probe-read-zero", sec: f1, prog: cat(fp(R1, -8), one(movi(R2, 0), movi(R3, 0), call(asm.FnProbeReadKernel))), want: "ok"},
		{name: "probe-read-negative", sec: f1, prog: cat(one(call(asm.FnKtimeGetNs), mov(R2, R0)), fp(R1, -8), one(movi(R3, 0), call(asm.FnProbeReadKernel))),
			want: "R2 min value is negative, either use unsigned or 'var &= const'"},
		{name: "probe-read-too-big", sec: f1, prog: cat(one(call(asm.FnKtimeGetNs), mov(R2, R0), asm.And.Imm(R2, 0xff)), fp(R1, -8), one(movi(R3, 0), call(asm.FnProbeReadKernel))),
			want: "invalid indirect access to stack R1 off=-8 size=255"},
		{name: "probe-read-bounded", sec: f1, prog: cat(one(call(asm.FnKtimeGetNs), mov(R2, R0), asm.And.Imm(R2, 7)), fp(R1, -8), one(movi(R3, 0), call(asm.FnProbeReadKernel))),
			want61: "invalid indirect read from stack R1 off -8+0 size 7", want: "ok"}, // 6.1: a variable size drops raw mode
		{name: "probe-read-scalar-dst", sec: f1, prog: cat(one(movi(R1, 0), movi(R2, 8), movi(R3, 0), call(asm.FnProbeReadKernel))),
			want61: "R1 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, alloc_mem, buf",
			want:   "R1 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_"},
		// bpf_trace_printk: readable memory + non-zero size.
		{name: "trace-printk", sec: f1, prog: cat(one(st(R10, -8, 0x0a6968, DW)), fp(R1, -8), one(movi(R2, 8), call(asm.FnTracePrintk))), want: "ok"},
		{name: "trace-printk-zero", sec: f1, prog: cat(one(st(R10, -8, 0, DW)), fp(R1, -8), one(movi(R2, 0), call(asm.FnTracePrintk))),
			want61: "invalid zero-sized read", want: "R2 invalid zero-sized read: u64=[0,0]"},
		// Maps.
		{name: "map-lookup-null-checked", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), jmpi(asm.JEq, R0, 0, 1), ldx(R3, R0, 0, DW))), want: "ok"},
		{name: "map-lookup-unchecked", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), ldx(R3, R0, 0, DW))), want: "R0 invalid mem access 'map_value_or_null'"},
		{name: "map-lookup-arith-unchecked", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), addi(R0, 4))), want: "R0 pointer arithmetic on map_value_or_null prohibited, null-check it first"},
		{name: "map-value-oob", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), jmpi(asm.JEq, R0, 0, 1), ldx(R3, R0, 4, DW))), want: "R0 min value is outside of the allowed memory range",
			logHas: []string{"invalid access to map value, value_size=8 off=4 size=8"}},
		{name: "map-value-var-index", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), jmpi(asm.JEq, R0, 0, 4), ldx(R3, R1, 0, B), asm.And.Imm(R3, 7), asm.Add.Reg(R0, R3), ldx(R4, R0, 0, B))), want: "R1 !read_ok"},
		{name: "map-value-var-in-bounds", sec: f1, maps: hash, prog: cat(one(ldx(R6, R1, 0, B), st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), jmpi(asm.JEq, R0, 0, 3), asm.And.Imm(R6, 7), asm.Add.Reg(R0, R6), ldx(R4, R0, 0, B))), want: "ok"},
		{name: "map-value-var-too-far", sec: f1, maps: hash, prog: cat(one(ldx(R6, R1, 0, B), st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), jmpi(asm.JEq, R0, 0, 3), asm.And.Imm(R6, 15), asm.Add.Reg(R0, R6), ldx(R4, R0, 0, B))),
			want: "R0 max value is outside of the allowed memory range", logHas: []string{"invalid access to map value, value_size=8 off=15 size=1"}},
		{name: "map-key-outside-stack", sec: f1, maps: hash, prog: cat(one(mapPtr(R1, 0), mov(R2, R10), call(asm.FnMapLookupElem))),
			want: "invalid indirect access to stack R2 off=0 size=4"},
		{name: "map-key-uninit", sec: f1, maps: hash, prog: cat(one(mapPtr(R1, 0)), fp(R2, -4), one(call(asm.FnMapLookupElem))),
			want61: "invalid indirect read from stack R2 off -4+0 size 4", want: "ok"},
		{name: "map-update", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), st(R10, -16, 7, DW), mapPtr(R1, 0)), fp(R2, -4), fp(R3, -16),
			one(movi(R4, 0), call(asm.FnMapUpdateElem))), want: "ok"},
		{name: "map-update-value-short", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4), fp(R3, -4),
			one(movi(R4, 0), call(asm.FnMapUpdateElem))), want: "invalid indirect access to stack R3 off=-4 size=8"},
		{name: "map-wrong-arg", sec: f1, maps: hash, prog: cat(fp(R2, -4), one(movi(R1, 0), call(asm.FnMapLookupElem))),
			want: "R1 type=scalar expected=map_ptr"},
		{name: "map-bad-fd", sec: f1, maps: hash, prog: cat(one(mapPtr(R1, 3))), want: "fd 3 is not pointing to valid bpf_map"},
		{name: "map-value-as-key", sec: f1, maps: hash, prog: cat(one(st(R10, -4, 1, W), mapPtr(R1, 0)), fp(R2, -4),
			one(call(asm.FnMapLookupElem), jmpi(asm.JEq, R0, 0, 4), mov(R2, R0), mapPtr(R1, 0), call(asm.FnMapLookupElem))), want: "ok"},
		// Read-only maps (.rodata): reads fine, writes refused (check_map_access_type).
		{name: "rodata-read", sec: f1, maps: []Map{{Name: ".rodata", Type: "array", KeySize: 4, ValueSize: 16, MaxEntries: 1, ReadOnly: true}},
			prog: cat(one(asm.LoadMapValue(R1, 0, 0), ldx(R2, R1, 8, DW))), want: "ok"},
		{name: "rodata-write", sec: f1, maps: []Map{{Name: ".rodata", Type: "array", KeySize: 4, ValueSize: 16, MaxEntries: 1, ReadOnly: true}},
			prog: cat(one(asm.LoadMapValue(R1, 0, 0), st(R1, 8, 1, DW))), want: "write into map forbidden, value_size=16 off=8 size=8"},
		{name: "rodata-probe-read-into", sec: f1, maps: []Map{{Name: ".rodata", Type: "array", KeySize: 4, ValueSize: 16, MaxEntries: 1, ReadOnly: true}},
			prog: cat(one(asm.LoadMapValue(R1, 0, 0), movi(R2, 8), movi(R3, 0), call(asm.FnProbeReadKernel))), want: "write into map forbidden, value_size=16 off=0 size=8"},
		{name: "printk-fmt-in-rodata", sec: f1, maps: []Map{{Name: ".rodata", Type: "array", KeySize: 4, ValueSize: 14, MaxEntries: 1, ReadOnly: true}},
			prog: cat(one(asm.LoadMapValue(R1, 0, 0), movi(R2, 14), call(asm.FnTracePrintk))), want: "ok"},
		{name: "map-value-pseudo-offset", sec: f1, maps: []Map{{Name: ".bss", Type: "array", KeySize: 4, ValueSize: 16, MaxEntries: 1}},
			prog: cat(one(asm.LoadMapValue(R1, 0, 8), ldx(R2, R1, 8, DW))), want: "R1 min value is outside of the allowed memory range",
			logHas: []string{"invalid access to map value, value_size=16 off=16 size=8"}},
		// bpf_get_current_task_btf: trusted task_struct on 6.12.
		{name: "current-task-btf", sec: f1, prog: cat(one(call(asm.FnGetCurrentTaskBtf), ldx(R2, R0, 0, DW))), want: "ok",
			logHas612: []string{"R0_w=trusted_ptr_task_struct()"}},
	}
	runCases(t, cases)
}
