// Command fetchunicorn puts the newest libunicorn Debian ships (sid's
// libunicorn-dev and the library package it depends on) in trampjit's cache,
// $XDG_CACHE_HOME/trampjit/unicorn (or ~/.cache/trampjit/unicorn), for `make`
// to build against: <cache>/unicorn/current/pkgconfig is a PKG_CONFIG_PATH
// entry whose libdir is the rpath to link with. It downloads with
// `apt-get download` through a private apt configuration derived from the
// machine's sources (kernel/vm), installs nothing and leaves the system's apt
// configuration alone. Usage: go run ./internal/fetchunicorn [-max-age 24h].
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/trampjit/trampjit/kernel/vm"
)

func main() {
	maxAge := flag.Duration("max-age", 24*time.Hour, "use the cached library without asking the archive if checked within this long")
	arch := flag.String("arch", runtime.GOARCH, "Debian architecture (amd64 or arm64)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: fetchunicorn [-max-age D] [-arch amd64|arm64]")
		os.Exit(2)
	}
	if err := run(*arch, *maxAge); err != nil {
		fmt.Fprintln(os.Stderr, "fetchunicorn:", err)
		os.Exit(1)
	}
}

func run(arch string, maxAge time.Duration) error {
	if arch != "amd64" && arch != "arm64" {
		return fmt.Errorf("architecture %q: want amd64 or arm64", arch)
	}
	cache, err := vm.CacheDir()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	lib, err := Fetch(ctx, cache, arch, maxAge, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Printf("libunicorn %s in %s\n", lib.Version, lib.Dir)
	return nil
}
