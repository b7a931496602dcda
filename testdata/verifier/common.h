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

/* helpers and maps of tracing tools (storage, ringbuf, tools, spinlock tests) */
#define BPF_MAP_TYPE_PERF_EVENT_ARRAY 4
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_STACK_TRACE 7
#define BPF_MAP_TYPE_SK_STORAGE 24
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_MAP_TYPE_INODE_STORAGE 28
#define BPF_MAP_TYPE_TASK_STORAGE 29
#define BPF_MAP_TYPE_CGRP_STORAGE 32
#define BPF_F_NO_PREALLOC 1
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1
#define BPF_F_CURRENT_CPU 0xffffffffULL
struct bpf_spin_lock { u32 val; };
struct pt_regs;
struct cgroup;
struct vm_area_struct;
struct btf_ptr { void *ptr; u32 type_id; u32 flags; };
struct bpf_pidns_info { u32 pid; u32 tgid; };
struct bpf_perf_event_value { u64 counter; u64 enabled; u64 running; };
static long (*bpf_probe_read)(void *dst, u32 size, const void *unsafe_ptr) = (void *)4;
static long (*bpf_get_current_uid_gid)(void) = (void *)15;
static long (*bpf_get_current_comm)(void *buf, u32 size_of_buf) = (void *)16;
static long (*bpf_perf_event_output)(void *ctx, void *map, u64 flags, void *data, u64 size) = (void *)25;
static long (*bpf_get_stackid)(void *ctx, void *map, u64 flags) = (void *)27;
static u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_probe_read_str)(void *dst, u32 size, const void *unsafe_ptr) = (void *)45;
static long (*bpf_perf_event_read_value)(void *map, u64 flags, struct bpf_perf_event_value *buf, u32 buf_size) = (void *)55;
static long (*bpf_get_stack)(void *ctx, void *buf, u32 size, u64 flags) = (void *)67;
static u64 (*bpf_get_current_cgroup_id)(void) = (void *)80;
static long (*bpf_spin_lock)(struct bpf_spin_lock *lock) = (void *)93;
static long (*bpf_spin_unlock)(struct bpf_spin_lock *lock) = (void *)94;
static void *(*bpf_sk_storage_get)(void *map, void *sk, void *value, u64 flags) = (void *)107;
static long (*bpf_sk_storage_delete)(void *map, void *sk) = (void *)108;
static long (*bpf_send_signal)(u32 sig) = (void *)109;
static long (*bpf_probe_read_user)(void *dst, u32 size, const void *unsafe_ptr) = (void *)112;
static long (*bpf_probe_read_user_str)(void *dst, u32 size, const void *unsafe_ptr) = (void *)114;
static long (*bpf_probe_read_kernel_str)(void *dst, u32 size, const void *unsafe_ptr) = (void *)115;
static long (*bpf_send_signal_thread)(u32 sig) = (void *)117;
static long (*bpf_get_ns_current_pid_tgid)(u64 dev, u64 ino, struct bpf_pidns_info *nsdata, u32 size) = (void *)120;
static u64 (*bpf_get_current_ancestor_cgroup_id)(int ancestor_level) = (void *)123;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, u64 size, u64 flags) = (void *)130;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, u64 size, u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, u64 flags) = (void *)132;
static void (*bpf_ringbuf_discard)(void *data, u64 flags) = (void *)133;
static u64 (*bpf_ringbuf_query)(void *ringbuf, u64 flags) = (void *)134;
static void *(*bpf_inode_storage_get)(void *map, void *inode, void *value, u64 flags) = (void *)145;
static int (*bpf_inode_storage_delete)(void *map, void *inode) = (void *)146;
static long (*bpf_d_path)(struct path *path, char *buf, u32 sz) = (void *)147;
static long (*bpf_snprintf_btf)(char *str, u32 str_size, struct btf_ptr *ptr, u32 btf_ptr_size, u64 flags) = (void *)149;
static void *(*bpf_per_cpu_ptr)(const void *percpu_ptr, u32 cpu) = (void *)153;
static void *(*bpf_this_cpu_ptr)(const void *percpu_ptr) = (void *)154;
static void *(*bpf_task_storage_get)(void *map, struct task_struct *task, void *value, u64 flags) = (void *)156;
static long (*bpf_task_storage_delete)(void *map, struct task_struct *task) = (void *)157;
static u64 (*bpf_ktime_get_coarse_ns)(void) = (void *)160;
static long (*bpf_snprintf)(char *str, u32 str_size, const char *fmt, u64 *data, u32 data_len) = (void *)165;
static struct pt_regs *(*bpf_task_pt_regs)(struct task_struct *task) = (void *)175;
static long (*bpf_find_vma)(struct task_struct *task, u64 addr, void *callback_fn, void *callback_ctx, u64 flags) = (void *)180;
static long (*bpf_copy_from_user_task)(void *dst, u32 size, const void *user_ptr, struct task_struct *tsk, u64 flags) = (void *)191;
static void *(*bpf_map_lookup_percpu_elem)(void *map, const void *key, u32 cpu) = (void *)195;
static u64 (*bpf_ktime_get_tai_ns)(void) = (void *)208;
static void *(*bpf_cgrp_storage_get)(void *map, struct cgroup *cgroup, void *value, u64 flags) = (void *)210;
static long (*bpf_cgrp_storage_delete)(void *map, struct cgroup *cgroup) = (void *)211;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
