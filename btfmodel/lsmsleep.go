package btfmodel

// LSMSleepableHook is bpf_lsm_is_sleepable_hook (kernel/bpf/bpf_lsm.c): the hook (its
// bpf_lsm_ name) is on sleepable_lsm_hooks. bpf_d_path is allowed in LSM programs on these.
func LSMSleepableHook(name string) bool { return sleepableLSMHooks[name] }
