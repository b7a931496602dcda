/* kfunc declarations for kfunc*.bpf.c and rcu*.bpf.c: typed __ksym externs (libbpf resolves
 * each by name against vmlinux BTF and writes its BTF id into the call), and the few CO-RE
 * structs they need beyond common.h (flavoured with ___k so common.h's stay as they are). */
#include "common.h"

#define __ksym __attribute__((section(".ksyms")))
#define __weak __attribute__((weak))

struct cgroup;
struct bpf_cpumask;
struct bpf_key;
struct bpf_dynptr { u64 __opaque[2]; } __attribute__((aligned(8)));

extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern struct cgroup *bpf_cgroup_acquire(struct cgroup *cgrp) __ksym;
extern void bpf_cgroup_release(struct cgroup *cgrp) __ksym;
extern struct cgroup *bpf_cgroup_ancestor(struct cgroup *cgrp, int level) __ksym;
extern struct cgroup *bpf_cgroup_from_id(u64 cgid) __ksym;
extern long bpf_task_under_cgroup(struct task_struct *task, struct cgroup *ancestor) __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern int bpf_path_d_path(struct path *path, char *buf, unsigned long buf__sz) __ksym;
extern int bpf_get_file_xattr(struct file *file, const char *name__str, struct bpf_dynptr *value_p) __ksym;
extern struct file *bpf_get_task_exe_file(struct task_struct *task) __ksym;
extern void bpf_put_file(struct file *file) __ksym;
extern struct bpf_cpumask *bpf_cpumask_create(void) __ksym;
extern void bpf_cpumask_release(struct bpf_cpumask *cpumask) __ksym;
extern struct bpf_key *bpf_lookup_user_key(u32 serial, u64 flags) __ksym;
extern struct bpf_key *bpf_lookup_system_key(u64 id) __ksym;
extern void bpf_key_put(struct bpf_key *bkey) __ksym;
extern u32 bpf_dynptr_size(const struct bpf_dynptr *p) __ksym;
extern int bpf_dynptr_from_skb(void *skb, u64 flags, struct bpf_dynptr *ptr) __ksym;
extern void trampjit_no_such_kfunc(void) __ksym;
extern void *bpf_dynptr_slice(const struct bpf_dynptr *p, u32 offset, void *buffer__opt, u32 buffer__szk) __ksym;
/* a kernel function that is no kfunc: libbpf resolves it, the verifier refuses it */
extern int bpf_fentry_test1(int a) __ksym;
#define trampjit_plain_kernel_function bpf_fentry_test1

static long (*bpf_dynptr_from_mem)(void *data, u32 size, u64 flags, struct bpf_dynptr *ptr) = (void *)197;

struct cgroup___k { int level; } CORE;
struct css_set___k { struct cgroup *dfl_cgrp; } CORE;
struct task_struct___k {
	int pid;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct css_set___k *cgroups;
} CORE;

struct bpf_iter_num { u64 __opaque[1]; } __attribute__((aligned(8)));
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/* kfuncs of one profile only (kfunc_tables.bpf.c) */
struct kmem_cache___k { unsigned int size; } CORE;
struct bpf_iter_task { u64 __opaque[3]; } __attribute__((aligned(8)));
extern int bpf_strlen(const char *s__ign) __ksym;
extern int bpf_strcmp(const char *s1__ign, const char *s2__ign) __ksym;
extern int bpf_send_signal_task(struct task_struct *task, int sig, int type, u64 value) __ksym;
extern struct task_struct *bpf_task_from_vpid(s32 vpid) __ksym;
extern int bpf_copy_from_user_str(void *dst, u32 dst__sz, const void *unsafe_ptr__ign, u64 flags) __ksym;
extern void cgroup_rstat_updated(struct cgroup *cgrp, int cpu) __ksym;
extern struct kmem_cache___k *bpf_get_kmem_cache(u64 addr) __ksym;
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task__nullable, unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;
extern struct inode *bpf_real_data_inode(struct file *file) __ksym;
extern u64 bpf_kfunc_call_test1(struct sock *sk, u32 a, u64 b, u32 c, u64 d) __ksym;
extern void *bpf_rdonly_cast(const void *obj__ign, u32 btf_id__k) __ksym;
#define bpf_core_type_id_kernel(type) __builtin_btf_type_id(*(typeof(type) *)0, 1)
