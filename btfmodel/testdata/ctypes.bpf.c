// One parameter per function, each of a C type whose spelling the test expects back from
// CName and whose BTF kind it expects from KindName; clang writes the BTF.
// Rebuild: clang -target bpf -g -O2 -c ctypes.bpf.c -o ctypes.bpf.o
#define __user __attribute__((btf_type_tag("user")))
#define F(n, T) __attribute__((noinline, used)) int n(T p) { return sizeof(p); }

typedef unsigned long long u64;
typedef struct { int a; } anon_t;
struct sk { int a; };
union u { int a; long b; };
enum e { E0, E1 };
struct opaque;
union uopaque;
struct holder {
	int arr[4];
	char *names[2];
	struct { int x; } inner;
	union { int y; } uinner;
};

F(t_int, int)
F(t_uint, unsigned int)
F(t_ulong, unsigned long)
F(t_schar, signed char)
F(t_bool, _Bool)
F(t_charp, char *)
F(t_ccharp, const char *)
F(t_charpp, char **)
F(t_ccharpc, const char *const)
F(t_skp, struct sk *)
F(t_cskp, const struct sk *)
F(t_sk, struct sk)
F(t_up, union u *)
F(t_u, union u)
F(t_e, enum e)
F(t_u64, u64)
F(t_anonp, anon_t *)
F(t_fnp, __typeof__(int (*)(int, char *)))
F(t_varfnp, __typeof__(int (*)(const char *, ...)))
F(t_voidp, void *)
F(t_vintp, volatile int *)
F(t_rintp, int *restrict)
F(t_userp, const char __user *)
F(t_opaquep, struct opaque *)
F(t_uopaquep, union uopaque *)
F(t_holderp, struct holder *)

char _license[] __attribute__((section("license"), used)) = "GPL";
