# trampjit: `make demo` and `make test` do all set-up on a fresh Debian machine (as root).

SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin
GO ?= go
FUZZTIME ?= 60s
BENCHTIME ?= 1s
TESTTIMEOUT ?= 60m

# Debian packages the build and the tests use: libunicorn for emu (cgo), qemu for the kernel
# guests, binutils for both architectures as independent encoders, clang for BPF objects.
DEBS := gcc libc6-dev pkg-config libunicorn-dev qemu-system-x86 qemu-system-arm \
	binutils binutils-aarch64-linux-gnu clang llvm xz-utils ca-certificates

.PHONY: all deps build demo test vet bench golden fuzz kernels corpus clean

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

build: deps
	$(GO) build -o bin/trampjit ./cmd/trampjit

demo: build
	@echo "== the trampoline model of a real kernel function (Debian 6.12, x86_64)"
	bin/trampjit model --btf testdata/btf/vmlinux-6.12-amd64.btf.xz --func tcp_v4_connect --kernel 6.12 --arch amd64
	@echo "== a struct passed by value takes two slots"
	bin/trampjit model --proto 'struct pair { u64 a; u32 b; }; int f(struct pair p, int x)' --kernel 6.12 --arch amd64
	@echo "== the same function on arm64 and on 6.1 x86_64"
	bin/trampjit model --btf testdata/btf/vmlinux-6.12-arm64.btf.xz --func tcp_v4_send_ack --kernel 6.12 --arch arm64
	bin/trampjit model --btf testdata/btf/vmlinux-6.1-amd64.btf.xz --func tcp_v4_send_ack --kernel 6.1 --arch amd64

vet:
	$(GO) vet ./...

test: deps vet
	$(GO) test -timeout $(TESTTIMEOUT) ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

# Regenerate golden files; review the diff, then commit.
golden: deps
	$(GO) test ./amd64/ ./arm64/ -run Golden -update

# Fuzz every parser for FUZZTIME each.
FUZZ_TARGETS := btfmodel:FuzzParseProto btfmodel:FuzzLoad
fuzz: deps
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

# Fetch the Debian kernel images (cached under $$XDG_CACHE_HOME/trampjit).
kernels: build
	bin/trampjit kernel fetch --all

# Re-capture the kernel corpus (testdata/kernel/<kernel>-<arch>) from real kernels under qemu.
PROFILES := 6.12-amd64 6.1-amd64 6.12-arm64 6.1-arm64
corpus: kernels
	@for p in $(PROFILES); do \
		k=$${p%%-*}; a=$${p##*-}; echo "== corpus $$p"; \
		bin/trampjit kernel capture --kernel $$k --arch $$a --btf -o testdata/kernel/$$p || exit 1; \
		bin/trampjit diff --corpus testdata/kernel/$$p | tail -2; \
	done

clean:
	rm -rf bin
