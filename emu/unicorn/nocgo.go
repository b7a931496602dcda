//go:build !cgo

package unicorn

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotAvailable is what every entry point returns in a build without cgo:
// the types and constants exist, so that the rest of trampjit (gen, model,
// verify, diff) builds anywhere, but there is no emulator to run.
var ErrNotAvailable = errors.New("unicorn: not available (trampjit was built without cgo; rebuild with CGO_ENABLED=1 and libunicorn)")

// Engine stands for a Unicorn instance; without cgo none can be opened.
type Engine struct{ arch Arch }

// Context stands for a saved CPU state.
type Context struct{}

// Version is empty: no library is linked.
func Version() string { return "" }

// Open returns ErrNotAvailable.
func Open(arch Arch) (*Engine, error) { return OpenModel(arch, ModelDefault) }

// OpenModel returns ErrNotAvailable.
func OpenModel(arch Arch, model int) (*Engine, error) { return nil, ErrNotAvailable }

func (c Code) Error() string { return fmt.Sprintf("unicorn error %d", int(c)) }

// The methods exist for the API only: no Engine can be opened.

func (e *Engine) Arch() Arch   { return e.arch }
func (e *Engine) Close() error { return nil }
func (e *Engine) Start(begin, until uint64, timeout time.Duration, count uint64) (Exit, error) {
	return Exit{}, ErrNotAvailable
}
func (e *Engine) RunRegs(begin, count uint64, in []Reg, inVals []uint64, out []Reg, outVals []uint64) (Exit, error) {
	return Exit{}, ErrNotAvailable
}
func (e *Engine) Run(begin, count uint64) (Exit, error) { return Exit{}, ErrNotAvailable }
func (e *Engine) Stop() error                           { return ErrNotAvailable }
func (e *Engine) HookCode(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return 0, ErrNotAvailable
}
func (e *Engine) HookBlock(begin, end uint64, fn func(addr uint64, size uint32)) (Hook, error) {
	return 0, ErrNotAvailable
}
func (e *Engine) HookMem(kinds MemHooks, begin, end uint64, fn func(MemAccess)) (Hook, error) {
	return 0, ErrNotAvailable
}
func (e *Engine) HookMemInvalid(begin, end uint64, fn func(MemAccess) bool) (Hook, error) {
	return 0, ErrNotAvailable
}
func (e *Engine) HookIntr(fn func(intno uint32)) (Hook, error)      { return 0, ErrNotAvailable }
func (e *Engine) HookInsnInvalid(fn func() bool) (Hook, error)      { return 0, ErrNotAvailable }
func (e *Engine) HookX86Insn(insn int, fn func()) (Hook, error)     { return 0, ErrNotAvailable }
func (e *Engine) FlushCode() error                                  { return ErrNotAvailable }
func (e *Engine) FastStores(begin, end uint64) error                { return ErrNotAvailable }
func (e *Engine) InvalidateCode(begin, end uint64) error            { return ErrNotAvailable }
func (e *Engine) Unhook(h Hook) error                               { return ErrNotAvailable }
func (e *Engine) Map(addr, size uint64, prot Prot) error            { return ErrNotAvailable }
func (e *Engine) MapHost(addr, size uint64, p Prot) ([]byte, error) { return nil, ErrNotAvailable }
func (e *Engine) Unmap(addr, size uint64) error                     { return ErrNotAvailable }
func (e *Engine) Protect(addr, size uint64, prot Prot) error        { return ErrNotAvailable }
func (e *Engine) Read(addr uint64, buf []byte) error                { return ErrNotAvailable }
func (e *Engine) Write(addr uint64, data []byte) error              { return ErrNotAvailable }
func (e *Engine) ReadU64(addr uint64) (uint64, error)               { return 0, ErrNotAvailable }
func (e *Engine) WriteU64(addr, v uint64) error                     { return ErrNotAvailable }
func (e *Engine) Regions() ([]Region, error)                        { return nil, ErrNotAvailable }
func (e *Engine) Reg(r Reg) (uint64, error)                         { return 0, ErrNotAvailable }
func (e *Engine) SetReg(r Reg, v uint64) error                      { return ErrNotAvailable }
func (e *Engine) ReadRegs(regs []Reg, vals []uint64) error          { return ErrNotAvailable }
func (e *Engine) WriteRegs(regs []Reg, vals []uint64) error         { return ErrNotAvailable }
func (e *Engine) PC() (uint64, error)                               { return 0, ErrNotAvailable }
func (e *Engine) SP() (uint64, error)                               { return 0, ErrNotAvailable }
func (e *Engine) AddSentinel(addr uint64, k SentinelKind) error     { return ErrNotAvailable }
func (e *Engine) RemoveSentinel(addr uint64) error                  { return ErrNotAvailable }
func (e *Engine) CountInsns(begin, end uint64) (Hook, error)        { return 0, ErrNotAvailable }
func (e *Engine) SetPreciseFaults(on bool) error                    { return ErrNotAvailable }
func (e *Engine) NewContext() (*Context, error)                     { return nil, ErrNotAvailable }
func (c *Context) Save() error                                      { return ErrNotAvailable }
func (c *Context) Restore() error                                   { return ErrNotAvailable }
func (c *Context) Reg(r Reg) (uint64, error)                        { return 0, ErrNotAvailable }
func (c *Context) SetReg(r Reg, v uint64) error                     { return ErrNotAvailable }
func (c *Context) Free() error                                      { return nil }
