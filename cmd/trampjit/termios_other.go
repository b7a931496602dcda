//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package main

import "golang.org/x/sys/unix"

// ioctlGetTermios is the ioctl that reads a terminal's settings (BSD name).
const ioctlGetTermios = unix.TIOCGETA
