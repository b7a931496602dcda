module github.com/trampjit/trampjit

go 1.26.0

require (
	github.com/cavaliergopher/cpio v1.0.1 // indirect
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/ulikunitz/xz v0.5.17 // indirect
	golang.org/x/arch v0.33.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
)
