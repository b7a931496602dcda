package verifier_test

import (
	"github.com/trampjit/trampjit/kernel"
	"github.com/trampjit/trampjit/verifier"
)

// elfOptions gives the model the .kconfig values the kernel backend sends for profile
// ("6.12-amd64"): the same kernel.KconfigFor. Without the profile's config in the kernel
// cache the .kconfig contents stay unknown to the model.
func elfOptions(profile string) verifier.ELFOptions {
	v, cfg, err := kernel.KconfigFor(profile)
	if err != nil {
		return verifier.ELFOptions{}
	}
	return verifier.ELFOptions{Kconfig: cfg, Version: v}
}
