//go:build !(linux && amd64 && cgo)

package native

import (
	"fmt"
	"runtime"
)

// Supported says whether this host can run x86-64 code natively.
const Supported = false

// ExitAddr is where sentinels branch to; there is none on this host.
func ExitAddr() uint64 { return 0 }

// Exec refuses: the native engine runs x86-64 code on x86-64 Linux hosts only.
func Exec(*Plan) (*Result, error) {
	return nil, fmt.Errorf("native: needs an x86_64 Linux host and cgo (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
}
