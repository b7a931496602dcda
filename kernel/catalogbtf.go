package kernel

import "github.com/trampjit/trampjit/btfmodel"

// catalogAbsent are the catalog's functions a profile's Debian build does not have in its
// BTF (TestCatalogAbsentMatchesBTF checks them against testdata/kernel/<kernel>-*/vmlinux.btf.xz):
// the catalog leaves their cases out for that profile. Every profile has an entry.
var catalogAbsent = map[btfmodel.Kernel]map[string]bool{
	btfmodel.Kernel61: {
		"bpf_modify_return_test2":           true, // net/bpf/test_run.c, after 6.1
		"ZSTD_compress_usingCDict_advanced": true,
		"do_sock_setsockopt":                true,
		"acpi_call_prm_handler":             true,
		"secure_tcp_seq_and_ts_off":         true,
	},
	btfmodel.Kernel612: {},
	btfmodel.Kernel72: {
		"__delete_from_swap_cache": true, // mm/swap_state.c, reworked before 7.2
	},
}

// catalogAbsentArch are the catalog's functions an architecture's Debian builds lack in
// vmlinux BTF under every profile (TestCatalogAbsentMatchesBTF checks them too).
var catalogAbsentArch = map[btfmodel.Arch]map[string]bool{
	btfmodel.RISCV64: {
		"acpi_call_prm_handler": true, // ACPI_PRMT depends on X86_64 || ARM64 (drivers/acpi/Kconfig)
		"__ext4_new_inode":      true, // Debian's riscv64 config has CONFIG_EXT4_FS=m: a module's BTF
	},
}

// has reports whether the profile's BTF has a function the catalog may use.
func (c *catalog) has(fn string) bool {
	return !catalogAbsent[btfmodel.Kernel(c.kernel)][fn] && !catalogAbsentArch[btfmodel.Arch(c.arch)][fn]
}
