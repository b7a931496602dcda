// Package vm runs trampjit's guest agent under qemu on Debian's own kernels.
//
// Fetch derives the Debian archive from the machine's apt sources (the main entry of the
// release codename), writes a private apt configuration under $XDG_CACHE_HOME/trampjit/apt
// (bookworm, trixie and sid, main, amd64, arm64 and riscv64), downloads the newest cloud kernel
// of a profile's series with apt-get — linux-image-6.1.*-cloud (bookworm),
// linux-image-6.12.*-cloud (trixie), or for 7.2 (sid, where linux-image-* became a
// metapackage) linux-binary-7.2.*-cloud with its config from linux-base-*; riscv64 has no
// cloud flavour and takes the generic riscv64 package, whose Image 6.12 installs as
// boot/vmlinux-* — and extracts the kernel and its config in Go; everything is
// cached, and a cached kernel needs no network. FetchPinned prefers the build a corpus was
// captured from, falls back to the newest of the series with a note, and fails with
// ErrSeriesGone when the archive has dropped the series. BuildAgent builds the static agent,
// BuildInitramfs packs it as /init with its request, and Run boots qemu (TCG) with a hard
// timeout, returning the agent's frames (package wire) or a RunError whose Reason says what
// failed: qemu missing, kernel failed to boot, guest hung, agent crashed.
package vm
