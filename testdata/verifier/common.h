/* Shared declarations for the verifier test programs: plain C for clang -target bpf, no
 * vmlinux.h. Kernel structs list only the fields used, with CO-RE (preserve_access_index)
 * so their offsets follow the BTF the object is loaded against. */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;
typedef int s32;
typedef long long s64;

#define SEC(x) __attribute__((section(x), used))
#define CORE __attribute__((preserve_access_index))

/* libbpf's BTF map definition macros */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2

/* helpers, by id (include/uapi/linux/bpf.h) */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, u64 flags) = (void *)2;
static u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_trace_printk)(const char *fmt, u32 fmt_size, ...) = (void *)6;
static u32 (*bpf_get_prandom_u32)(void) = (void *)7;
static u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_probe_read_kernel)(void *dst, u32 size, const void *unsafe_ptr) = (void *)113;
static long (*bpf_copy_from_user)(void *dst, u32 size, const void *user_ptr) = (void *)148;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)158;
static u64 (*bpf_get_func_ip)(void *ctx) = (void *)173;
static u64 (*bpf_get_attach_cookie)(void *ctx) = (void *)174;
static long (*bpf_get_func_arg)(void *ctx, u32 n, u64 *value) = (void *)183;
static long (*bpf_get_func_ret)(void *ctx, u64 *value) = (void *)184;
static long (*bpf_get_func_arg_cnt)(void *ctx) = (void *)185;

struct bpf_fentry_test_t { struct bpf_fentry_test_t *a; } CORE;
struct in6_addr { union { u8 u6_addr8[16]; u32 u6_addr32[4]; } in6_u; } CORE;
struct sock_common {
	u16 skc_family;
	u32 skc_daddr;
	u16 skc_dport;
	int skc_bound_dev_if;
	struct in6_addr skc_v6_daddr;
} CORE;
struct inode { u16 i_mode; unsigned long i_ino; } CORE;
struct qstr { const unsigned char *name; } CORE;
struct dentry { struct inode *d_inode; struct qstr d_name; unsigned char d_iname[32]; } CORE;
struct path { struct dentry *dentry; } CORE;
struct file { struct inode *f_inode; unsigned int f_flags; struct path f_path; } CORE;
struct socket { short type; struct file *file; struct sock *sk; } CORE;
struct sock { struct sock_common __sk_common; struct socket *sk_socket; u32 sk_mark; int sk_rcvbuf; } CORE;
struct sockaddr { u16 sa_family; char sa_data[14]; } CORE;
struct sockaddr_in { u16 sin_family; u16 sin_port; } CORE;
struct task_struct { int pid; int tgid; char comm[16]; struct task_struct *real_parent; } CORE;
struct linux_binprm { struct file *file; const char *filename; } CORE;
struct timespec64 { s64 tv_sec; long tv_nsec; } CORE;

/* bpf-to-bpf calls and callbacks (subprog, global, callback tests) */
#define __noinline __attribute__((noinline))
static long (*bpf_for_each_map_elem)(void *map, void *callback_fn, void *callback_ctx, u64 flags) = (void *)164;
static long (*bpf_loop)(u32 nr_loops, void *callback_fn, void *callback_ctx, u64 flags) = (void *)181;
