# trampjit: `make demo` and `make test` do all set-up on a fresh Debian machine (as root).

SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
GO ?= go
FUZZTIME ?= 60s
BENCHTIME ?= 1s
TESTTIMEOUT ?= 60m

# libunicorn: by default the newest Debian ships (sid's; its library needs only libc6 >= 2.34),
# which `make deps` fetches into $$XDG_CACHE_HOME/trampjit/unicorn (or ~/.cache/trampjit) and the
# build links by pkg-config path and rpath; UNICORN=system builds against libunicorn-dev.
UNICORN ?= newest
TJCACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/trampjit
UCPC := $(TJCACHE)/unicorn/current/pkgconfig
# UCENV starts a recipe line that compiles cgo code. It is shell, not make, so that a library
# fetched by deps earlier in the same run is seen.
UCENV = if [ "$(UNICORN)" != system ] && [ -f "$(UCPC)/unicorn.pc" ]; then \
	export PKG_CONFIG_PATH="$$(realpath "$(UCPC)")"; \
	export CGO_LDFLAGS="-Wl,-rpath,$$(pkg-config --variable=libdir unicorn)"; fi;

# Debian packages the build and the tests use: libunicorn for emu (cgo), qemu for the kernel
# guests, binutils for both architectures as independent encoders, clang for BPF objects,
# chromium to load the HTML pages headless (screenshot and DOM).
DEBS := gcc libc6-dev pkg-config libunicorn-dev qemu-system-x86 qemu-system-arm qemu-system-misc opensbi \
	binutils binutils-aarch64-linux-gnu binutils-riscv64-linux-gnu clang llvm xz-utils ca-certificates chromium

.PHONY: all deps build demo test vet tidy nocgo bench golden fuzz kernels corpus claims clean

all: build

deps:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "missing Debian packages; run as root:"; \
			echo "  apt-get update && apt-get install -y" $$missing; exit 1; \
		fi; \
		echo "installing:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@command -v $(GO) >/dev/null || { echo "Go is not installed (need Go 1.26)"; exit 1; }
	@if [ "$(UNICORN)" != system ]; then $(GO) run ./internal/fetchunicorn || \
		echo "note: no newer libunicorn could be fetched; building against the system's ($$(pkg-config --modversion unicorn))"; fi
	@$(UCENV) echo "libunicorn $$(pkg-config --modversion unicorn) ($${PKG_CONFIG_PATH:-system libunicorn-dev})"

build: deps
	@$(UCENV) $(GO) build -o bin/trampjit ./cmd/trampjit

demo: build
	@echo "== the trampoline model of a real kernel function (Debian 6.12, x86_64)"
	bin/trampjit model --btf testdata/btf/vmlinux-6.12-amd64.btf.xz --func tcp_v4_connect --kernel 6.12 --arch amd64
	@echo "== a struct passed by value takes two slots"
	bin/trampjit model --proto 'struct pair { u64 a; u32 b; }; int f(struct pair p, int x)' --kernel 6.12 --arch amd64
	@echo "== twelve arguments: x86_64 6.12 copies stack arguments, arm64 6.12 refuses"
	bin/trampjit model --btf testdata/btf/vmlinux-6.12-arm64.btf.xz --func tcp_v4_send_ack --kernel 6.12 --arch arm64
	@echo "== fentry + fmod_ret + fexit on bpf_modify_return_test, x86_64 and arm64 (annotated listings)"
	bin/trampjit gen --btf testdata/kernel/6.12-amd64/vmlinux.btf.xz --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --arch amd64
	bin/trampjit gen --btf testdata/kernel/6.12-arm64/vmlinux.btf.xz --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --arch arm64
	@echo "== the same on riscv64 (6.12): compressed forms as the kernel picks them (c.addi16sp where an assembler writes c.addi)"
	bin/trampjit gen --btf testdata/kernel/6.12-riscv64/vmlinux.btf.xz --kernel 6.12 --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --arch riscv64
	@echo "== its stack frame on arm64: every slot, from the frame base and sp, and the instructions that write and read it"
	bin/trampjit frame --btf testdata/kernel/6.12-arm64/vmlinux.btf.xz --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --arch arm64
	@echo "== the same request as one HTML page per architecture (listing, frame diagram, slots linked to their instructions) and side by side"
	@for a in amd64 arm64 riscv64; do bin/trampjit gen --btf testdata/kernel/6.12-$$a/vmlinux.btf.xz --kernel 6.12 --func bpf_modify_return_test \
		--fentry 1 --fmod-ret 1 --fexit 1 --arch $$a --format html -o bin/demo-bpf_modify_return_test-$$a.html || exit 1; \
		echo "wrote $(CURDIR)/bin/demo-bpf_modify_return_test-$$a.html"; done
	@bin/trampjit compare --btf testdata/kernel/6.12-amd64/vmlinux.btf.xz --kernel 6.12 --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 \
		--format html > bin/demo-bpf_modify_return_test-compare.html.tmp && mv bin/demo-bpf_modify_return_test-compare.html.tmp bin/demo-bpf_modify_return_test-compare.html && \
		echo "wrote $(CURDIR)/bin/demo-bpf_modify_return_test-compare.html (open it in a browser)"
	@echo "== run it: under Unicorn on all three arches, and natively on x86_64 (fmod_ret returns 7: the original is skipped)"
	bin/trampjit run --btf testdata/kernel/6.12-amd64/vmlinux.btf.xz --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --arch amd64 --args 1,0x1000 --ret-values 7
	bin/trampjit run --btf testdata/kernel/6.12-arm64/vmlinux.btf.xz --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --arch arm64 --args 1,0x1000 --ret-values 7
	bin/trampjit run --btf testdata/kernel/6.12-riscv64/vmlinux.btf.xz --kernel 6.12 --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --arch riscv64 --args 1,0x1000 --ret-values 7
	@if [ "$$(uname -m)" = x86_64 ]; then bin/trampjit run --btf testdata/kernel/6.12-amd64/vmlinux.btf.xz --func bpf_modify_return_test --fentry 1 --fmod-ret 1 --fexit 1 --args 1,0x1000 --ret-values 7 --engine native --count 1000000 | head -1; fi
	@echo "== a struct_ops image: what a BPF TCP congestion control's ssthresh is entered through (7.2, x86_64), and run through the ops table's pointer on arm64"
	bin/trampjit gen --struct-ops tcp_congestion_ops.ssthresh --btf testdata/kernel/7.2-amd64/vmlinux.btf.xz --kernel 7.2 --arch amd64
	bin/trampjit run --struct-ops tcp_congestion_ops.ssthresh --btf testdata/kernel/7.2-arm64/vmlinux.btf.xz --kernel 7.2 --arch arm64 --args 0x1000 --ret-values 10
	@echo "== every image the real kernels built, regenerated byte for byte"
	@for p in $(PROFILES); do echo "-- $$p"; bin/trampjit diff --corpus testdata/kernel/$$p | tail -2; done
	@echo "== the verifier model on a few programs"
	bin/trampjit verify cmd/trampjit/testdata/verify.bpf.o --btf testdata/kernel/6.12-amd64/vmlinux.btf.xz --kernel 6.12

vet:
	@$(UCENV) $(GO) vet ./...

test: deps vet tidy nocgo
	@$(UCENV) TRAMPJIT_REQUIRE_CHROMIUM=1 $(GO) test -timeout $(TESTTIMEOUT) ./...

# go.mod and go.sum are what `go mod tidy` makes of them.
tidy:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# Without cgo the CLI still builds (gen, model, verify, diff; run says why it cannot).
nocgo:
	CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/trampjit

# The claims table of docs/cost.md: per-hit path lengths and attach costs counted in guests
# under qemu -icount shift=0 (amd64 and arm64, 6.12 and the newest profile; ~10 min), the
# reports kept in testdata/cost/ (`trampjit kernel cost --from testdata/cost --update-doc
# docs/cost.md` re-renders without booting).
claims: build
	bin/trampjit kernel cost --all --save testdata/cost --update-doc docs/cost.md

# Every benchmark on the library the build uses, then the emulation ones again on the
# system's libunicorn when that is another.
bench: deps
	@$(UCENV) $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...
	@if [ "$(UNICORN)" != system ] && [ -f "$(UCPC)/unicorn.pc" ]; then \
		echo "== emu benchmarks again on the system's libunicorn $$(pkg-config --modversion unicorn)"; \
		$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./emu/...; fi

# Regenerate golden files; review the diff, then commit.
golden: deps
	$(GO) test ./amd64/ ./arm64/ ./riscv64/ -run Golden -update

# Fuzz every parser for FUZZTIME each.
FUZZ_TARGETS := btfmodel:FuzzParseProto btfmodel:FuzzLoad jit:FuzzParseRequest kernel:FuzzParseCases kernel/wire:FuzzDecode verifier:FuzzParseJSON \
	kernel:FuzzParseCorpus kernel:FuzzSameModuloAddresses verifier:FuzzParseELF kernel/vm:FuzzOpenKernelFile
fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

# Rebuild the verifier's test objects (testdata/verifier/*.bpf.o) from their C sources with
# clang; the objects are committed so that the tests do not need clang.
BPF_SRCS := $(wildcard testdata/verifier/*.bpf.c)
.PHONY: bpf-objects verifier-fuzz
bpf-objects: deps
	@for f in $(BPF_SRCS); do echo "== clang $$f"; \
		clang -target bpf -g -O2 -fdebug-prefix-map=$(CURDIR)=. -c $$f -o $${f%.c}.o || exit 1; \
	done

# Differential run: FUZZCOUNT generated programs (a third with subprogram, callback, global
# function and kfunc calls) through the verifier model and the real verifier of each of
# FUZZPROFILE (qemu guest, a boot per FUZZBATCH programs: about 65 programs/s with the boot);
# prints disagreements by kind and shape; with FUZZOUT=dir, writes every disagreement with
# its program and both answers to dir/<profile>.json; with FUZZCACHE=dir, the kernel's
# answers are kept there and a later run boots only for programs it has not seen.
FUZZCOUNT ?= 10000
FUZZPROFILE ?= 6.1-amd64 6.12-amd64 6.12-arm64 7.2-amd64 7.2-arm64
FUZZBATCH ?= 2500
FUZZSEED ?= 1
FUZZOUT ?=
FUZZCACHE ?=
verifier-fuzz: deps
	@$(if $(FUZZOUT),mkdir -p $(FUZZOUT);) fail=0; for p in $(FUZZPROFILE); do \
		echo "== verifier-fuzz $$p: $(FUZZCOUNT) programs, seed $(FUZZSEED)"; \
		$(GO) test ./verifier -run '^TestDifferentialFuzz$$' -count=1 -timeout $(TESTTIMEOUT) -v \
			-fuzzcount $(FUZZCOUNT) -fuzzbatch $(FUZZBATCH) -fuzzseed $(FUZZSEED) -fuzzprofile $$p \
			$(if $(FUZZOUT),-fuzzjson $(abspath $(FUZZOUT))/$$p.json) \
			$(if $(FUZZCACHE),-fuzzcache $(abspath $(FUZZCACHE))) || fail=1; \
	done; exit $$fail

# Differential run of images: IMAGEFUZZCOUNT random attach requests per profile/arch drawn
# from the corpus's BTF (testdata/kernel/<p>/vmlinux.btf.xz), captured in guests (a boot per
# 250) and compared with the model; disagreements are minimised (re-captured) and written to
# IMAGEFUZZOUT/<p>/ (minimised.jsonl corpus lines, minimised-cases.json for kernel capture
# --merge). Not part of make test, which runs 50 per profile/arch (TestImageFuzzSample).
# docs/image-fuzz.md has the figures of the last run.
IMAGEFUZZCOUNT ?= 2000
IMAGEFUZZSEED ?= 1
IMAGEFUZZPROFILE ?= 6.12-amd64 7.2-amd64 6.12-arm64 7.2-arm64 6.12-riscv64 7.2-riscv64 6.1-amd64 6.1-arm64
IMAGEFUZZOUT ?= bin/image-fuzz
.PHONY: image-fuzz
image-fuzz: build
	@fail=0; for p in $(IMAGEFUZZPROFILE); do \
		echo "== image-fuzz $$p: $(IMAGEFUZZCOUNT) requests, seed $(IMAGEFUZZSEED)"; \
		bin/trampjit kernel fuzz --quiet --count $(IMAGEFUZZCOUNT) --seed $(IMAGEFUZZSEED) \
			--kernel $${p%-*} --arch $${p##*-} --out $(IMAGEFUZZOUT)/$$p || fail=1; \
	done; exit $$fail

# Source mutation run over amd64, arm64, btfmodel, verifier and the emu oracle (one core,
# go test -overlay: the tree is not written); not part of make test. docs/mutation.md lists
# the equivalent mutants and the last figures.
MUTSEED ?= 1
MUTCAP ?= 50
.PHONY: mutation
mutation: deps
	$(GO) run ./internal/mutation/cmd -seed $(MUTSEED) -cap $(MUTCAP) -equiv docs/mutation.md

# Fetch the Debian kernel images (cached under $$XDG_CACHE_HOME/trampjit).
# --all fetches btfmodel.Arches; riscv64 (no cloud flavour; captured before its backend is
# listed there) is fetched by name.
kernels: build
	bin/trampjit kernel fetch --all
	bin/trampjit kernel fetch --kernel 6.12 --arch riscv64
	bin/trampjit kernel fetch --kernel 7.2 --arch riscv64

# Re-capture the kernel corpus (testdata/kernel/<kernel>-<arch>) from real kernels under qemu.
PROFILES := 6.1-amd64 6.1-arm64 6.12-amd64 6.12-arm64 7.2-amd64 7.2-arm64 6.12-riscv64 7.2-riscv64
corpus: kernels
	@for p in $(PROFILES); do \
		k=$${p%%-*}; a=$${p##*-}; echo "== corpus $$p"; \
		bin/trampjit kernel capture --kernel $$k --arch $$a --btf -o testdata/kernel/$$p || exit 1; \
		bin/trampjit diff --corpus testdata/kernel/$$p | tail -2; \
	done

clean:
	rm -rf bin

# The verifier model against the real kernels on BPF objects it has never seen: the
# fentry/fexit/fmod_ret/lsm/tp_btf programs of Debian's packages (internal/realworld fetches
# them into $$XDG_CACHE_HOME/trampjit/realworld), one guest boot per profile, one profile at a
# time; not part of make test. Writes RWOUT per profile ({profile} replaced), a .md beside each
# and summary.md; docs/verifier-realworld.md has the figures.
RWPROFILES ?= 6.1-amd64,6.12-amd64,6.12-arm64,7.2-amd64,7.2-arm64
RWOUT ?= /tmp/realworld/{profile}.json
.PHONY: verifier-realworld
verifier-realworld: deps
	$(GO) test ./verifier -run '^TestRealWorld$$' -count=1 -timeout 180m -v -realworld \
		-realworld.profiles '$(RWPROFILES)' -realworld.out '$(RWOUT)'

# Every kernel TestAnyKernel knows, including the ones that fail on their own now and then
# under TCG (Debian 12's 6.12.95); make test boots only the reliable ones.
.PHONY: anykernel
anykernel: deps
	@$(UCENV) $(GO) test ./cmd/trampjit -run '^TestAnyKernel$$' -count=1 -v -timeout $(TESTTIMEOUT) -anykernel all
