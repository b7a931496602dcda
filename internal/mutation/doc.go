// Package mutation is trampjit's source mutation tester. It parses a package's Go files with
// go/ast, derives mutants (comparison operators flipped, + and - swapped, integer constants
// moved by one, conditions negated, statements and early returns deleted, true and false
// swapped), and runs the package's tests once per mutant with `go test -overlay`, so that
// the mutated file replaces the original only inside that go command: the working tree is
// never written. A mutant the tests fail on is killed; one they pass on survived; one that
// does not compile is dropped from the figures.
//
// Arguments of message-building calls (fmt.*, errors.New, panic) are not mutated: they only
// change wording. Sampling is deterministic: mutants are ordered by position, shuffled by a
// seed and capped per package.
//
// Run it with `make mutation` or `go run ./internal/mutation/cmd`.
package mutation
