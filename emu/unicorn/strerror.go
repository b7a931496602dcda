//go:build cgo

package unicorn

/*
#include <unicorn/unicorn.h>
*/
import "C"

// Error returns Unicorn's own message (uc_strerror).
func (c Code) Error() string { return C.GoString(C.uc_strerror(C.uc_err(c))) }

// check wraps a uc_err into an *Error, or returns nil for UC_ERR_OK.
func check(op string, err C.uc_err) error {
	if err == C.UC_ERR_OK {
		return nil
	}
	return &Error{Op: op, Code: Code(err)}
}
