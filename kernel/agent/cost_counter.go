//go:build amd64 || arm64

package main

const haveCounter = true

func counter() uint64
func counterHz() uint64
func knownLoop(n uint64) uint64
