package kernel_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/trampjit/trampjit/kernel"
)

// Compare two kernels' captures (corpus directories, as `trampjit kernel capture` writes
// them) case by case. In a test of your own module, read the corpus you committed and a
// fresh capture of your kernel, and fail when !cmp.Agrees().
func ExampleCompareCorpora() {
	a, err := kernel.ReadCorpus("../testdata/kernel/6.12-amd64")
	if err != nil {
		log.Fatal(err)
	}
	b, err := kernel.ReadCorpus("../testdata/kernel/7.2-amd64")
	if err != nil {
		log.Fatal(err)
	}
	only, err := kernel.ParseOnly("bpf_fentry_test1-f*")
	if err != nil {
		log.Fatal(err)
	}
	cmp, err := kernel.CompareCorpora(a, b, &kernel.CompareOptions{Only: only})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("A %s, B %s\n", cmp.A.Release, cmp.B.Release)
	for _, d := range cmp.Cases {
		fmt.Printf("%s: %s", d.ID, d.Verdict.Text())
		if d.Verdict == kernel.Differs {
			fmt.Printf(" at +%#x (%s); sections %s", d.FirstA.Offset, d.First, strings.Join(d.Changed, ", "))
		}
		fmt.Println()
	}
	for _, s := range cmp.ChangedSections() {
		fmt.Printf("%s changed in %d cases\n", s, cmp.Summary.Sections[s])
	}
	fmt.Println("the kernels agree:", cmp.Agrees())
	// Output:
	// A 6.12.117+deb13-cloud-amd64, B 7.2.13+deb14-cloud-amd64
	// bpf_fentry_test1-fentry-fexit: differs at +0x28 (fentry 1); sections fentry 1, ip_after_call, fexit 2, epilogue
	// bpf_fentry_test1-fentry: differs at +0x19 (fentry 1); sections fentry 1
	// bpf_fentry_test1-fexit: differs at +0x92 (epilogue); sections ip_after_call, fexit 1, epilogue
	// bpf_fentry_test1-fsession: only in B
	// bpf_fentry_test1-fsession-sleepable: only in B
	// epilogue changed in 2 cases
	// fentry N changed in 2 cases
	// fexit N changed in 2 cases
	// ip_after_call changed in 2 cases
	// the kernels agree: false
}
