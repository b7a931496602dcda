package main

import "golang.org/x/sys/unix"

// ioctlGetTermios is the ioctl that reads a terminal's settings.
const ioctlGetTermios = unix.TCGETS
