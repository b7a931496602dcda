package btfmodel

import (
	"strings"

	"github.com/cilium/ebpf/btf"
)

// scope holds the types a prototype string may name: C's base types, the kernel's integer
// typedefs (spelled and chained as in vmlinux BTF, so names and sizes match the kernel's), a
// few kernel structs commonly passed by value, and whatever the string itself defines.
type scope struct {
	ints     map[string]*btf.Int
	typedefs map[string]btf.Type
	structs  map[string]btf.Type // "struct x" / "union x" / "enum x" -> type (Fwd until defined)
}

func newScope() *scope {
	s := &scope{ints: map[string]*btf.Int{}, typedefs: map[string]btf.Type{}, structs: map[string]btf.Type{}}
	// Linux builds with -funsigned-char since 6.2, on every architecture (and 6.1 models carry
	// no signedness flags), so plain char is unsigned here.
	charEnc := btf.Char
	for _, d := range []struct {
		name string
		size uint32
		enc  btf.IntEncoding
	}{
		{"char", 1, charEnc},
		{"signed char", 1, btf.Signed},
		{"unsigned char", 1, 0},
		{"short int", 2, btf.Signed},
		{"short unsigned int", 2, 0},
		{"int", 4, btf.Signed},
		{"unsigned int", 4, 0},
		{"long int", 8, btf.Signed},
		{"long unsigned int", 8, 0},
		{"long long int", 8, btf.Signed},
		{"long long unsigned int", 8, 0},
		{"_Bool", 1, btf.Bool},
		{"__int128", 16, btf.Signed},
		{"__int128 unsigned", 16, 0},
	} {
		s.ints[d.name] = &btf.Int{Name: d.name, Size: d.size, Encoding: d.enc}
	}
	td := func(name string, target btf.Type) btf.Type {
		t := &btf.Typedef{Name: name, Type: target}
		s.typedefs[name] = t
		return t
	}
	i := s.ints
	td("bool", i["_Bool"])
	for _, w := range []struct {
		bits     string
		u, signd string
	}{{"8", "unsigned char", "signed char"}, {"16", "short unsigned int", "short int"},
		{"32", "unsigned int", "int"}, {"64", "long long unsigned int", "long long int"}} {
		u := td("__u"+w.bits, i[w.u])
		sg := td("__s"+w.bits, i[w.signd])
		td("u"+w.bits, u)
		td("s"+w.bits, sg)
		if w.bits != "8" {
			td("__le"+w.bits, u)
			td("__be"+w.bits, u)
		}
	}
	// include/linux/types.h: uintN_t is uN, intN_t is sN (as vmlinux BTF shows).
	td("uint8_t", s.typedefs["u8"])
	td("uint16_t", s.typedefs["u16"])
	td("uint32_t", s.typedefs["u32"])
	td("uint64_t", s.typedefs["u64"])
	td("int8_t", s.typedefs["s8"])
	td("int16_t", s.typedefs["s16"])
	td("int32_t", s.typedefs["s32"])
	td("int64_t", s.typedefs["s64"])
	ulong := td("__kernel_ulong_t", i["long unsigned int"])
	long := td("__kernel_long_t", i["long int"])
	td("size_t", td("__kernel_size_t", ulong))
	td("ssize_t", td("__kernel_ssize_t", long))
	td("loff_t", td("__kernel_loff_t", i["long long int"]))
	td("uintptr_t", i["long unsigned int"])
	td("phys_addr_t", s.typedefs["u64"])
	td("time64_t", s.typedefs["__s64"])
	uid := td("uid_t", td("__kernel_uid32_t", i["unsigned int"]))
	gid := td("gid_t", td("__kernel_gid32_t", i["unsigned int"]))
	td("pid_t", td("__kernel_pid_t", i["int"]))
	td("umode_t", i["short unsigned int"])
	td("dev_t", td("__kernel_dev_t", s.typedefs["u32"]))
	td("gfp_t", i["unsigned int"])
	td("slab_flags_t", i["unsigned int"])
	td("fmode_t", i["unsigned int"])
	td("blk_opf_t", s.typedefs["__u32"])
	td("sector_t", s.typedefs["u64"])
	// Kernel structs passed by value, laid out as in vmlinux (include/linux/uidgid.h,
	// include/linux/sockptr.h, include/linux/time64.h).
	td("kuid_t", &btf.Struct{Size: 4, Members: []btf.Member{{Name: "val", Type: uid}}})
	td("kgid_t", &btf.Struct{Size: 4, Members: []btf.Member{{Name: "val", Type: gid}}})
	voidp := &btf.Pointer{Target: &btf.Void{}}
	td("sockptr_t", &btf.Struct{Size: 16, Members: []btf.Member{
		{Name: "", Type: &btf.Union{Size: 8, Members: []btf.Member{
			{Name: "kernel", Type: voidp},
			{Name: "user", Type: &btf.Pointer{Target: &btf.TypeTag{Value: "user", Type: &btf.Void{}}}},
		}}},
		{Name: "is_kernel", Type: s.typedefs["bool"], Offset: 64, BitfieldSize: 1},
	}})
	s.structs["struct timespec64"] = &btf.Struct{Name: "timespec64", Size: 16, Members: []btf.Member{
		{Name: "tv_sec", Type: s.typedefs["time64_t"]},
		{Name: "tv_nsec", Type: i["long int"], Offset: 64},
	}}
	return s
}

// baseInt maps a multiset of C integer keywords to the BTF base type name.
func (s *scope) baseInt(words []string) (btf.Type, bool) {
	count := map[string]int{}
	for _, w := range words {
		count[w]++
	}
	unsigned := count["unsigned"] > 0
	signed := count["signed"] > 0
	if unsigned && signed {
		return nil, false
	}
	switch {
	case count["_Bool"] == 1 && len(words) == 1:
		return s.ints["_Bool"], true
	case count["float"] == 1 && len(words) == 1:
		return &btf.Float{Name: "float", Size: 4}, true
	case count["double"] == 1 && count["long"] == 0 && len(words) == 1:
		return &btf.Float{Name: "double", Size: 8}, true
	case count["double"] == 1 && count["long"] == 1 && len(words) == 2:
		return &btf.Float{Name: "long double", Size: 16}, true
	case count["__int128"] == 1:
		if unsigned {
			return s.ints["__int128 unsigned"], true
		}
		return s.ints["__int128"], true
	case count["char"] == 1:
		if count["char"]+count["signed"]+count["unsigned"] != len(words) {
			return nil, false
		}
		switch {
		case unsigned:
			return s.ints["unsigned char"], true
		case signed:
			return s.ints["signed char"], true
		}
		return s.ints["char"], true
	}
	rest := len(words) - count["unsigned"] - count["signed"] - count["int"]
	if count["unsigned"] > 1 || count["signed"] > 1 || count["int"] > 1 {
		return nil, false
	}
	name := ""
	switch {
	case count["short"] == 1 && rest == 1:
		name = "short int"
	case count["long"] == 1 && rest == 1:
		name = "long int"
	case count["long"] == 2 && rest == 2:
		name = "long long int"
	case rest == 0:
		name = "int"
	default:
		return nil, false
	}
	if unsigned {
		name = strings.Replace(name, " int", " unsigned int", 1)
		if name == "int" {
			name = "unsigned int"
		}
	}
	return s.ints[name], true
}

var intWords = map[string]bool{
	"char": true, "short": true, "int": true, "long": true, "signed": true, "unsigned": true,
	"_Bool": true, "float": true, "double": true, "__int128": true,
}

// qualifiers are C qualifiers and kernel annotations; those with a BTF form map to it.
var qualifiers = map[string]string{
	"const": "const", "volatile": "volatile", "restrict": "restrict", "__restrict": "restrict",
	"__user": "user", "__percpu": "percpu", "__rcu": "rcu", "__iomem": "",
	"__kernel": "", "__force": "", "__bitwise": "", "__nocast": "",
}

// specifiers are storage classes and function attributes that do not change the prototype.
var specifiers = map[string]bool{
	"static": true, "extern": true, "inline": true, "__inline": true, "__always_inline": true,
	"noinline": true, "notrace": true, "asmlinkage": true, "__init": true, "__exit": true,
	"__cold": true, "__must_check": true, "__maybe_unused": true, "__weak": true,
	"__noreturn": true, "__visible": true, "__bpf_kfunc": true, "noinstr": true,
}
