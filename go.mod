module github.com/trampjit/trampjit

go 1.26.0

require (
	github.com/cavaliergopher/cpio v1.0.1
	github.com/cilium/ebpf v0.22.0
	github.com/google/go-cmp v0.7.0
	github.com/klauspost/compress v1.20.4
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/ulikunitz/xz v0.5.17
	golang.org/x/arch v0.33.0
	golang.org/x/net v0.48.0
	golang.org/x/sys v0.43.0
)
