// Package wire is the protocol between trampjit's host side (package kernel, kernel/vm) and
// its guest agent (kernel/agent): the request the agent finds in its initramfs, and the
// framed results it prints on the serial console.
//
// A frame is one line, "@@trampjit <kind> <crc32 hex> <base64 JSON>", so that kernel
// messages interleaved on the console cannot be mistaken for (or silently corrupt) results.
package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/trampjit/trampjit/jit"
)

// Marker starts every frame.
const Marker = "@@trampjit "

// RequestPath is where the agent reads its request inside the initramfs.
const RequestPath = "/trampjit/request.json"

// Frame kinds.
const (
	KindHello   = "hello"   // agent started: Hello
	KindInfo    = "info"    // Info
	KindCapture = "capture" // CaptureResult, one per case
	KindLog     = "log"     // free text progress, a JSON string
	KindFatal   = "fatal"   // the agent cannot go on: a JSON string
	KindDone    = "done"    // all work finished: Done
	KindBlob    = "blob"    // a chunk of a file the host asked for: Blob
)

// BlobChunk is how many bytes one blob frame carries.
const BlobChunk = 32 << 10

// Blob is one chunk of a guest file copied out over the console.
type Blob struct {
	Name   string `json:"name"` // guest path
	Offset int64  `json:"offset"`
	Total  int64  `json:"total"`
	Data   []byte `json:"data"`
}

// Request tells the agent what to do in one boot.
type Request struct {
	Kernel string `json:"kernel"` // profile, for the record
	Arch   string `json:"arch"`
	Info   bool   `json:"info"` // report Info
	BTF    bool   `json:"btf"`  // copy /sys/kernel/btf/vmlinux out as blob frames
	Cases  []Case `json:"cases,omitempty"`
	// Verify: load programs through the verifier (KindVerify frames), after the cases.
	Verify *VerifyRequest `json:"verify,omitempty"`
	// Cost: count the instructions of attach paths (KindCost frame), after the cases; the
	// guest runs under qemu -icount.
	Cost *CostRequest `json:"cost,omitempty"`
}

// Case is one attachment to capture: programs attached to Func in the given order.
type Case struct {
	ID    string     `json:"id"`
	Func  string     `json:"func"`
	Progs []jit.Prog `json:"progs"`
	// Target is "" for a kernel function, or "bpf" for tj_args0..tj_args5, global functions
	// (N u64 arguments, returning their sum plus N) of a program the agent loads itself.
	Target string `json:"target,omitempty"`
	// Run: the programs record their context, and the function is called once through
	// BPF_PROG_TEST_RUN (bpf_fentry_test*, bpf_modify_return_test*, BPF targets).
	Run bool `json:"run,omitempty"`
	// StructOps makes the case one member's image of an ops table (Func is "ops.member",
	// Progs the one struct_ops program): the agent registers a BPF implementation of the
	// whole table once per (ops, map) and answers each of its member cases from it.
	StructOps *StructOpsCase `json:"struct_ops,omitempty"`
}

// StructOpsCase is the recipe of one ops table's map and the member a case reads back;
// Member "" asks for every function-pointer member of the table in the guest's BTF, each
// reported under the case's id + "-" + member.
type StructOpsCase struct {
	Ops    string `json:"ops"`
	Member string `json:"member"`
	// Map tells two maps of one table apart (1, 2, ...); each has its own data (a unique
	// tcp_congestion_ops name) and its own images.
	Map int `json:"map"`
	// Link creates the map with BPF_F_LINK: the update builds the images without
	// registering the table (6.4+). Without it the update registers it.
	Link bool `json:"link,omitempty"`
	// Sleepable members are loaded with BPF_F_SLEEPABLE.
	Sleepable []string `json:"sleepable,omitempty"`
	// Data are the ops struct's data members init_member requires (char arrays: a name).
	Data map[string]string `json:"data,omitempty"`
	// Release names, per member, the kfunc that releases its referenced first argument
	// (Qdisc_ops.enqueue's skb: bpf_qdisc_skb_drop(skb, to_free), to_free = argument 3).
	Release map[string]string `json:"release,omitempty"`
	// Except and Recipes are for a discovery case (Ops ""): every table of the guest's BTF
	// (a bpf_struct_ops_<ops> value type) not named in Except is captured, with its recipe
	// from Recipes, or else as one BPF_F_LINK map of trivial programs.
	Except  []string        `json:"except,omitempty"`
	Recipes []StructOpsCase `json:"recipes,omitempty"`
}

// Run is what one call of the traced function looked like through the trampoline.
type Run struct {
	Ret   uint64    `json:"ret"` // BPF_PROG_TEST_RUN's retval (for fmod_ret: side effects<<16 | sum of returns)
	Error string    `json:"error,omitempty"`
	Errno string    `json:"errno,omitempty"`
	Progs []RunProg `json:"progs,omitempty"` // in attach order
}

// RunProg is what one program saw (the last call, if there were several).
type RunProg struct {
	Kind  jit.Kind `json:"kind"`
	Calls uint64   `json:"calls"`
	NArgs uint64   `json:"nr_args"` // bpf_get_func_arg_cnt: register slots
	Ctx   []uint64 `json:"ctx"`     // bpf_get_func_arg(0..nr_args-1)
	Ret   *uint64  `json:"ret,omitempty"`
	IP    uint64   `json:"ip,omitempty"` // bpf_get_func_ip
}

// Hello is the agent's first frame.
type Hello struct {
	Release string `json:"release"` // uname -r
	Version string `json:"version"` // uname -v
	Machine string `json:"machine"` // uname -m
}

// Info describes the guest kernel and CPU.
type Info struct {
	Hello
	Cmdline         string            `json:"cmdline"`
	Vulnerabilities map[string]string `json:"vulnerabilities"` // /sys/devices/system/cpu/vulnerabilities/*
	CPUFlags        []string          `json:"cpu_flags,omitempty"`
	BTFSize         int64             `json:"btf_size"`        // /sys/kernel/btf/vmlinux
	ErrorInjection  []string          `json:"error_injection"` // lines of debugfs error_injection/list
	Errors          map[string]string `json:"errors,omitempty"`
}

// ProgResult is one attached program as the kernel holds it.
type ProgResult struct {
	Kind    jit.Kind   `json:"kind"`
	Prog    uint64     `json:"prog,omitempty"`     // struct bpf_prog *
	BPFFunc uint64     `json:"bpf_func,omitempty"` // JITed entry (bpf_prog_info jited_ksyms)
	Cookie  jit.Cookie `json:"cookie,omitempty"`
	Tag     string     `json:"tag,omitempty"`
}

// CaptureResult is what the agent found for one case. Error is set when the kernel refused
// a load or an attach; Stage says which step failed.
type CaptureResult struct {
	ID      string            `json:"id"`
	Func    string            `json:"func"`
	Error   string            `json:"error,omitempty"`
	Errno   string            `json:"errno,omitempty"`
	Stage   string            `json:"stage,omitempty"` // "load", "attach", "locate", "read"
	Log     string            `json:"log,omitempty"`   // verifier log of a failed load
	Addr    uint64            `json:"addr,omitempty"`  // the function's symbol address
	IP      uint64            `json:"ip,omitempty"`    // the patched call site
	Image   uint64            `json:"image,omitempty"` // trampoline image address
	IM      uint64            `json:"im,omitempty"`    // struct bpf_tramp_image *
	Locate  string            `json:"locate,omitempty"`
	Checks  []string          `json:"checks,omitempty"`  // cross-checks that agreed (or not)
	Site    []byte            `json:"site,omitempty"`    // bytes at Addr (patch site)
	Code    []byte            `json:"code,omitempty"`    // image bytes up to the end of code
	Raw     []byte            `json:"raw,omitempty"`     // bytes read, past the end of code
	Progs   []ProgResult      `json:"progs,omitempty"`   // in attach order
	Symbols map[string]uint64 `json:"symbols,omitempty"` // helpers and every call target
	Targets []string          `json:"targets,omitempty"` // names the image calls, in order
	Run     *Run              `json:"run,omitempty"`
	// StructOps is where a struct_ops member's image was found and how its table is laid out.
	StructOps *StructOpsResult `json:"struct_ops,omitempty"`
}

// StructOpsResult is one member image of a registered (or linked) ops table.
type StructOpsResult struct {
	Map    string   `json:"map"`            // the struct_ops map's name
	Index  int      `json:"index"`          // the member's index in the ops struct (expected_attach_type)
	Mode   string   `json:"mode"`           // "reg": the update registered the table; "link": BPF_F_LINK, built only
	Page   int      `json:"page"`           // which of the map's image pages (0, 1, ...; see Layout)
	Ptr    jit.Addr `json:"ptr,omitempty"`  // the function pointer in the registered table (image + cfi offset)
	Ksym   string   `json:"ksym,omitempty"` // bpf__<ops>_<member>, where the kernel names images
	KsymAt jit.Addr `json:"ksym_addr,omitempty"`
	// KsymEnd is where the next [bpf] symbol starts: an upper bound of the image's extent.
	KsymEnd jit.Addr `json:"ksym_end,omitempty"`
	// Layout is the whole map's images in member order (the same in each member's case).
	Layout []StructOpsSlot `json:"layout,omitempty"`
}

// StructOpsSlot is one image of a map's table.
type StructOpsSlot struct {
	Member string   `json:"member"`
	Index  int      `json:"index"`
	Image  jit.Addr `json:"image"`
	Ptr    jit.Addr `json:"ptr,omitempty"`
	Size   int      `json:"size"` // code bytes (to the end of code)
	Page   int      `json:"page"`
}

// KindCost carries the one CostResult of a Cost request.
const KindCost = "cost"

// CostRequest asks for per-hit path lengths and attach costs on one traced function.
type CostRequest struct {
	Func       string   `json:"func"`       // called by BPF_PROG_TEST_RUN (bpf_modify_return_test)
	Mechanisms []string `json:"mechanisms"` // kprobe, kretprobe, kprobe_multi, kretprobe_multi, fentry, fexit, fmod_ret, raw_tp, tp_btf
	Counts     []int    `json:"counts"`     // programs attached at once
	Batches    int      `json:"batches"`    // measurements per point (the median is taken)
	Batch      int      `json:"batch"`      // hits per measurement
	Loop       []int    `json:"loop,omitempty"`
	Attach     int      `json:"attach,omitempty"` // attach 1..Attach fentry programs, one at a time
}

// CostStat is the spread of one point's measurements, in instructions per hit.
type CostStat struct {
	Median  float64 `json:"median"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	P10     float64 `json:"p10"`
	P90     float64 `json:"p90"`
	Samples int     `json:"samples"`
}

// CostPath is one mechanism with Progs programs attached; Stat is per hit, the baseline
// (Base) not subtracted.
type CostPath struct {
	Mech  string   `json:"mech"`
	Progs int      `json:"progs"`
	Stat  CostStat `json:"stat"`
	Base  float64  `json:"base"`            // the uninstrumented trigger's median, measured just before, per hit
	Error string   `json:"error,omitempty"` // where the kernel stopped attaching
	Errno string   `json:"errno,omitempty"`
	// Probe is how the kernel lists a kprobe mechanism's probe (debugfs kprobes/list, after the
	// address): "k bpf_modify_return_test+0x9 [OPTIMIZED]", "[FTRACE]" for an ftrace callback.
	Probe string `json:"probe,omitempty"`
	// Attached is how many programs were attached when measured: Progs, or fewer when the
	// kernel refused one (Error), whose predecessors are measured.
	Attached int `json:"attached"`
	// RunsMin and RunsMax are the fewest and most runs of one program over RunsOf triggers
	// (bpf_prog_info run_cnt, with kernel.bpf_stats_enabled on only for this check): every
	// program ran on every hit when both equal RunsOf (raw_tp on sys_enter counts more).
	RunsMin uint64 `json:"runs_min"`
	RunsMax uint64 `json:"runs_max"`
	RunsOf  int    `json:"runs_of"`
}

// CostLoop is a known loop of Iters iterations of PerIter instructions, counted MinTicks
// (the fewest of several tries: an interrupt only adds).
type CostLoop struct {
	Iters    int    `json:"iters"`
	PerIter  int    `json:"per_iter"`
	MinTicks uint64 `json:"min_ticks"`
}

// CostAttach is attaching the Nth fentry program to Func: counter ticks (guest virtual
// time) and the attaching thread's CPU time (CLOCK_THREAD_CPUTIME_ID), both in ns.
type CostAttach struct {
	N        int    `json:"n"`
	Ticks    uint64 `json:"ticks"`
	ThreadNs int64  `json:"thread_ns"`
	Error    string `json:"error,omitempty"`
}

// CostResult is a Cost request's answer.
type CostResult struct {
	Counter   string       `json:"counter"`    // "rdtsc" or "cntvct_el0"
	CounterHz uint64       `json:"counter_hz"` // CNTFRQ_EL0; 0 for the TSC (one tick per instruction under -icount shift=0)
	Baseline  CostStat     `json:"baseline"`   // the uninstrumented trigger, per hit
	Loop      []CostLoop   `json:"loop,omitempty"`
	Paths     []CostPath   `json:"paths,omitempty"`
	Attach    []CostAttach `json:"attach,omitempty"`
	Error     string       `json:"error,omitempty"`
}

// Done ends a boot's output.
type Done struct {
	Cases    int `json:"cases"`
	Programs int `json:"programs,omitempty"` // verified
}

// Encode renders one frame line (with trailing newline).
func Encode(kind string, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s%s %08x %s\n", Marker, kind, crc32.ChecksumIEEE(j), base64.StdEncoding.EncodeToString(j))
	return b.Bytes(), nil
}

// Write encodes a frame to w.
func Write(w io.Writer, kind string, v any) error {
	b, err := Encode(kind, v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Frame is a decoded frame.
type Frame struct {
	Kind string
	JSON []byte
}

// Decode parses a console line. ok is false for lines that are not frames; err is set for a
// frame that is damaged (bad base64 or checksum), which callers must report, not skip.
func Decode(line string) (f Frame, ok bool, err error) {
	i := strings.Index(line, Marker)
	if i < 0 {
		return Frame{}, false, nil
	}
	parts := strings.Fields(line[i+len(Marker):])
	if len(parts) != 3 {
		return Frame{}, true, fmt.Errorf("damaged frame: want kind, crc and payload, got %d fields", len(parts))
	}
	j, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil {
		return Frame{}, true, fmt.Errorf("damaged %s frame: %w", parts[0], err)
	}
	if got := fmt.Sprintf("%08x", crc32.ChecksumIEEE(j)); got != parts[1] {
		return Frame{}, true, fmt.Errorf("damaged %s frame: crc %s, want %s", parts[0], got, parts[1])
	}
	return Frame{Kind: parts[0], JSON: j}, true, nil
}
