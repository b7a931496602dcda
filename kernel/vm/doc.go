// Package vm runs trampjit's guest agent under qemu on Debian's own kernels.
//
// Fetch derives the Debian archive from the machine's apt sources (the main entry of the
// release codename), writes a private apt configuration under $XDG_CACHE_HOME/trampjit/apt
// (bookworm and trixie, main, amd64 and arm64), downloads the newest linux-image-6.1.*-cloud
// or linux-image-6.12.*-cloud package with apt-get, and extracts its vmlinuz and config in
// Go; everything is cached, and a cached kernel needs no network. BuildAgent builds the
// static agent, BuildInitramfs packs it as /init with its request, and Run boots qemu (TCG)
// with a hard timeout, returning the agent's frames (package wire) or a RunError whose
// Reason says what failed: qemu missing, kernel failed to boot, guest hung, agent crashed.
package vm
