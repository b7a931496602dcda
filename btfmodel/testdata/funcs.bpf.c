// Functions whose BTF a test reads from an ELF object's .BTF section.
// Rebuild: clang -target bpf -g -O2 -c funcs.bpf.c -o funcs.bpf.o
typedef unsigned long long u64;
typedef unsigned int u32;

struct pair {
	u64 a;
	u32 b;
};

__attribute__((noinline, used)) int pick(struct pair *p, int x)
{
	return x ? p->a : p->b;
}

__attribute__((section("tc"), used)) int entry(void *ctx)
{
	struct pair p = { 1, 2 };
	return pick(&p, (int)(long)ctx);
}

char _license[] __attribute__((section("license"), used)) = "GPL";
