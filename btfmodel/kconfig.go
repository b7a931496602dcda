package btfmodel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// .kconfig externs (extern unsigned int LINUX_KERNEL_VERSION __kconfig; extern bool
// CONFIG_BPF_LSM __kconfig __weak;): libbpf fills a read-only, frozen .kconfig map before
// loading (bpf_object__resolve_externs, tools/lib/bpf/libbpf.c), from the kernel's version
// and its build configuration.

// KconfigSection is the DATASEC (and map) of .kconfig externs.
const KconfigSection = ".kconfig"

// KernelVersionCode is LINUX_KERNEL_VERSION: KERNEL_VERSION(a, b, c), c capped at 255.
func (v Version) KernelVersionCode() uint32 {
	return uint32(v.Major)<<16 | uint32(v.Minor)<<8 | uint32(min(v.Patch, 255))
}

// Kconfig is a kernel build's configuration: CONFIG_X to "y", "m", "n" (from "# CONFIG_X is
// not set"), a number, or a quoted string.
type Kconfig map[string]string

// ParseKconfig reads a .config (Debian ships it as /boot/config-<version>).
func ParseKconfig(r io.Reader) (Kconfig, error) {
	cfg := Kconfig{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(l, "# "); ok {
			if n, ok := strings.CutSuffix(name, " is not set"); ok && strings.HasPrefix(n, "CONFIG_") {
				cfg[n] = "n"
			}
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			cfg[k] = v
		}
	}
	return cfg, sc.Err()
}

// KconfigData is the .kconfig map's value for ds on a kernel of version v built with cfg
// (nil: no CONFIG_ value known), as libbpf writes it: LINUX_KERNEL_VERSION,
// LINUX_HAS_SYSCALL_WRAPPER and LINUX_HAS_BPF_COOKIE (both true on the modelled kernels), and
// each CONFIG_X by its extern's type (bool: y/n; enum libbpf_tristate: y=1, n=0, m=2;
// char: the letter; integers: the number; char arrays: the string). A CONFIG_X the
// configuration does not have is 0 when weak and an error otherwise.
func KconfigData(ds *btf.Datasec, v Version, cfg Kconfig, weak map[string]bool) ([]byte, error) {
	data := make([]byte, ds.Size)
	for _, vs := range ds.Vars {
		vr, ok := vs.Type.(*btf.Var)
		if !ok || uint64(vs.Offset)+uint64(vs.Size) > uint64(len(data)) {
			return nil, fmt.Errorf("%s: malformed variable", KconfigSection)
		}
		out := data[vs.Offset : vs.Offset+vs.Size]
		name := vr.Name
		var val string
		switch name {
		case "LINUX_KERNEL_VERSION":
			val = strconv.FormatUint(uint64(v.KernelVersionCode()), 10)
		case "LINUX_HAS_SYSCALL_WRAPPER", "LINUX_HAS_BPF_COOKIE":
			val = "y"
		default:
			if !strings.HasPrefix(name, "CONFIG_") {
				if weak[name] {
					continue
				}
				return nil, fmt.Errorf("extern (kcfg) '%s': unknown", name)
			}
			var ok bool
			if val, ok = cfg[name]; !ok {
				if weak[name] {
					continue
				}
				return nil, fmt.Errorf("extern (kcfg) '%s': not found in the kernel's config", name)
			}
		}
		if err := putKconfig(out, vr.Type, val); err != nil {
			return nil, fmt.Errorf("extern (kcfg) '%s': %w", name, err)
		}
	}
	return data, nil
}

// putKconfig writes one value as libbpf's set_kcfg_value_tri, _str and _num do.
func putKconfig(out []byte, t btf.Type, val string) error {
	t = btf.UnderlyingType(t)
	switch tt := t.(type) {
	case *btf.Enum:
		if tt.Name != "libbpf_tristate" || len(out) < 4 {
			return fmt.Errorf("enum %s is not enum libbpf_tristate", tt.Name)
		}
		n := map[string]uint32{"y": 1, "n": 0, "m": 2}
		x, ok := n[val]
		if !ok {
			return fmt.Errorf("value %q is not a tristate", val)
		}
		binary.LittleEndian.PutUint32(out, x)
		return nil
	case *btf.Array:
		s, err := strconv.Unquote(val)
		if err != nil {
			return fmt.Errorf("value %s is not a string", val)
		}
		n := copy(out[:max(len(out)-1, 0)], s)
		clear(out[n:])
		return nil
	case *btf.Int:
		switch {
		case tt.Encoding == btf.Bool:
			switch val {
			case "y":
				out[0] = 1
			case "n":
				out[0] = 0
			default:
				return fmt.Errorf("value '%s' implies tristate or char type", val)
			}
			return nil
		case tt.Encoding == btf.Char && len(val) == 1:
			out[0] = val[0]
			return nil
		}
		switch val {
		case "y":
			val = "1"
		case "n":
			val = "0"
		}
		x, err := strconv.ParseInt(val, 0, 64)
		if err != nil {
			return fmt.Errorf("value %q is not a number", val)
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		if len(out) > 8 {
			return fmt.Errorf("integer of %d bytes", len(out))
		}
		copy(out, b[:len(out)])
		return nil
	}
	return fmt.Errorf("type %s cannot hold a config value", t)
}

// LinkKconfig points insns' .kconfig loads at the .kconfig map, as libbpf's relocations do
// (a BPF_PSEUDO_MAP_VALUE load at the variable's offset): cilium/ebpf marks each with a
// private kconfigMeta and resolves it only when it loads a collection. It returns the
// object's .kconfig DATASEC when insns use it.
func LinkKconfig(insns asm.Instructions, types *btf.Spec) *btf.Datasec {
	var ds *btf.Datasec
	if types == nil || types.TypeByName(KconfigSection, &ds) != nil {
		return nil
	}
	used := false
	for i := range insns {
		ins := &insns[i]
		if !ins.IsLoadFromMap() || ins.Reference() != "" {
			continue
		}
		off, ok := kconfigOffset(ins)
		if !ok {
			continue
		}
		*ins = ins.WithReference(KconfigSection)
		ins.Constant = int64(uint64(off) << 32)
		used = true
	}
	if !used {
		return nil
	}
	return ds
}

// kconfigOffset reads the offset of cilium/ebpf's kconfigMeta (elf_reader.go, v0.22: a
// metadata key of type kconfigMetaKey, a *kconfigMeta{Map, Offset} value) by reflection:
// the type is private. TestLinkKconfig fails if cilium/ebpf changes it.
func kconfigOffset(ins *asm.Instruction) (uint32, bool) {
	e := reflect.ValueOf(&ins.Metadata).Elem().FieldByName("head")
	for e.IsValid() && !e.IsNil() {
		el := e.Elem()
		k, v := el.FieldByName("key"), el.FieldByName("value")
		if k.Kind() == reflect.Interface && !k.IsNil() && k.Elem().Type().Name() == "kconfigMetaKey" &&
			v.Kind() == reflect.Interface && !v.IsNil() && v.Elem().Kind() == reflect.Pointer && !v.Elem().IsNil() {
			if off := v.Elem().Elem().FieldByName("Offset"); off.IsValid() && off.CanUint() {
				return uint32(off.Uint()), true
			}
		}
		e = el.FieldByName("next")
	}
	return 0, false
}
