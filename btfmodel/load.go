package btfmodel

import (
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf/btf"
	"github.com/ulikunitz/xz"

	"github.com/trampjit/trampjit/internal/suggest"
)

// maxBTFSize bounds what LoadFile reads (and decompresses): vmlinux BTF is ~6 MiB.
const maxBTFSize = 256 << 20

// LoadFile loads BTF from a raw file in the /sys/kernel/btf/vmlinux format, or from the .BTF
// section of an ELF object, optionally xz-compressed (detected by content, not by name).
// With a base spec the file is read as split BTF (a module's /sys/kernel/btf/<module>).
func LoadFile(path string, base *btf.Spec) (*btf.Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read BTF: %w", err)
	}
	defer f.Close()
	spec, err := Load(f, base)
	if err != nil {
		return nil, fmt.Errorf("read BTF from %s: %w", path, err)
	}
	return spec, nil
}

var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0}

// Load reads BTF as LoadFile does, from a reader.
func Load(r io.Reader, base *btf.Spec) (*btf.Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxBTFSize+1))
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, xzMagic) {
		xr, err := xz.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
		if data, err = io.ReadAll(io.LimitReader(xr, maxBTFSize+1)); err != nil {
			return nil, fmt.Errorf("xz: %w", err)
		}
	}
	if len(data) > maxBTFSize {
		return nil, fmt.Errorf("larger than %d MiB", maxBTFSize>>20)
	}
	return parse(data, base)
}

func parse(data []byte, base *btf.Spec) (spec *btf.Spec, err error) {
	// cilium/ebpf validates as it goes, but a parser of untrusted input must not take the
	// process down: turn a panic into an error naming the input as malformed.
	defer func() {
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("malformed BTF: %v", r)
		}
	}()
	if bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
		return parseELF(data, base)
	}
	if len(data) < 4 {
		return nil, errors.New("not BTF: file too short")
	}
	// The raw format starts with the BTF magic 0xeb9f in the file's byte order.
	if !(data[0] == 0x9f && data[1] == 0xeb) && !(data[0] == 0xeb && data[1] == 0x9f) {
		return nil, errors.New("not BTF: no BTF magic (0xeb9f) and not an ELF object")
	}
	if base != nil {
		return btf.LoadSplitSpecFromReader(bytes.NewReader(data), base)
	}
	return btf.LoadSpecFromReader(bytes.NewReader(data))
}

func parseELF(data []byte, base *btf.Spec) (*btf.Spec, error) {
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("ELF: %w", err)
	}
	sec := ef.Section(".BTF")
	if sec == nil {
		return nil, errors.New("ELF object has no .BTF section")
	}
	raw, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("ELF .BTF section: %w", err)
	}
	if base != nil {
		return btf.LoadSplitSpecFromReader(bytes.NewReader(raw), base)
	}
	// An object's .BTF refers to .data/.bss sizes that only the full ELF loader fixes up;
	// for function prototypes the raw section is enough, and it avoids needing .BTF.ext.
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		// Fall back to cilium's ELF loader, which knows how to fix up DATASEC sizes.
		if s2, err2 := btf.LoadSpecFromReader(bytes.NewReader(data)); err2 == nil {
			return s2, nil
		}
		return nil, err
	}
	return spec, nil
}

// FuncByName finds a BTF FUNC by name, as the kernel's btf_find_by_name_kind does: the FUNC
// of exactly that name with the lowest id (kernel BTF can hold several static functions with
// the same name). cilium/ebpf's AnyTypesByName matches CO-RE flavours too (a name is cut at
// its last "___"), so "____sys_recvmsg" also finds "____ip_mc_inc_group": only exact names
// count.
func FuncByName(spec *btf.Spec, name string) (*btf.Func, error) {
	types, err := spec.AnyTypesByName(name)
	if err != nil && !errors.Is(err, btf.ErrNotFound) {
		return nil, err
	}
	var funcs []*btf.Func
	var others []string
	for _, t := range types {
		if t.TypeName() != name {
			continue
		}
		if fn, ok := t.(*btf.Func); ok {
			funcs = append(funcs, fn)
		} else {
			others = append(others, KindName(t))
		}
	}
	if len(funcs) > 1 {
		slices.SortStableFunc(funcs, func(a, b *btf.Func) int {
			ia, _ := spec.TypeID(a)
			ib, _ := spec.TypeID(b)
			return cmp.Compare(ia, ib)
		})
	}
	if len(funcs) == 0 {
		if len(others) > 0 {
			return nil, fmt.Errorf("%s is a BTF %s, not a function", name, strings.Join(others, ", "))
		}
		return nil, &funcNotFoundError{spec: spec, name: name}
	}
	return funcs[0], nil
}

// funcNotFoundError names a function the BTF lacks. Its did-you-mean hint walks every FUNC
// of the spec, so it is worked out only when the message is read: the verifier and the
// generators ask for many names that are not there and only need to know that.
type funcNotFoundError struct {
	spec *btf.Spec
	name string
	once sync.Once
	msg  string
}

func (e *funcNotFoundError) Error() string {
	e.once.Do(func() {
		e.msg = fmt.Sprintf("function %s not found in BTF%s", e.name, suggest.Hint(e.name, funcNames(e.spec), ""))
	})
	return e.msg
}

// funcNames lists the function names of a btf.Spec, for suggestions.
func funcNames(spec *btf.Spec) []string {
	var names []string
	for t, err := range spec.All() {
		if err != nil {
			break
		}
		if fn, ok := t.(*btf.Func); ok {
			names = append(names, fn.Name)
		}
	}
	return names
}
