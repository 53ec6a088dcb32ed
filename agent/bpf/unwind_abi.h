/* The unwind tables kiln-agent's user space builds from call frame
 * information (.eh_frame / .debug_frame) and the BPF walker in sampler.bpf.c
 * reads. Shared by BPF C and C++, so plain C with kernel fixed-width types.
 *
 * Four BPF maps hold them:
 *
 *   unwind_rows    ARRAY of __u32, written by user space. Each file owns one
 *                  contiguous run of it, laid out as the OpenTelemetry
 *                  profiler lays out its stack deltas, 4 bytes a row:
 *                    words [0, pages]   per 64 KiB page of the file's code
 *                                       (from first_page), the run-relative
 *                                       index of its first row; the last one
 *                                       is the end of the run;
 *                    then the rows      sorted by pc: the pc's low 16 bits
 *                                       and an index into unwind_infos
 *                                       (KILN_ROW_PC_LOW, KILN_ROW_INFO).
 *                  A row holds from its pc up to the next row's pc, across
 *                  pages; the pc's high bits are its page's. Runs end with a
 *                  row of rule KILN_CFA_NONE, so every pc past the last FDE
 *                  is "no CFI here".
 *   unwind_infos   ARRAY of kiln_unwind_info: every distinct rule once (a
 *                  whole desktop has a few thousand), shared by all files.
 *   unwind_files   ARRAY of kiln_unwind_file, indexed by file slot: where the
 *                  file's run is. row_count 0 = the table is not loaded (yet,
 *                  or it could not be built): the walker falls back to frame
 *                  pointers and says so in the sample.
 *   proc_mappings  LPM trie: (pid, address prefix) -> kiln_unwind_mapping,
 *                  one entry per aligned block of every executable mapping
 *                  of a process user space has loaded (proc_loaded), files
 *                  and anonymous code (KILN_MAPPING_JIT) alike.
 *
 * Rule semantics are architecture neutral: "the CFA is register + offset"
 * with the register named by the rule (SP or FP); the caller's frame pointer
 * is saved at CFA + 8 * fp_offset (or SP + 8 * fp_offset in a signal frame);
 * the return address is at CFA - 8, or, in a signal frame, in the word after
 * the saved SP. x86-64 (rsp, rbp, rip) is what we build today. arm64 fits the
 * same rules: SP = sp, FP = x29, the return address x30 saved at CFA - 8 by
 * the usual `stp x29, x30, [sp, #-16]!`, and its rt_sigframe also keeps pc
 * right after sp. What arm64 adds is a leaf that never saves x30: its rows
 * need one more CFA rule ("return address still in the link register"),
 * taken from the sampled registers for the first frame only. Rows are 4
 * bytes so that a busy desktop's programs fit in 16 MiB of map memory.
 */
#ifndef KILN_AGENT_BPF_UNWIND_ABI_H
#define KILN_AGENT_BPF_UNWIND_ABI_H

/* How to find the CFA (the caller's stack pointer before the call). */
enum kiln_cfa_rule {
  KILN_CFA_NONE = 0,      /* no CFI covers this pc: try frame pointers */
  KILN_CFA_SP = 1,        /* CFA = SP + 8 * cfa_offset */
  KILN_CFA_FP = 2,        /* CFA = FP + 8 * cfa_offset */
  KILN_CFA_PLT = 3,       /* x86-64 lazy PLT: SP + 8, + 8 more once (pc & 15) >= cfa_offset */
  KILN_CFA_SP_DEREF = 4,  /* signal frame: CFA = *(SP + 8 * cfa_offset), pc in the next word */
  KILN_CFA_OUTERMOST = 5, /* the return address is undefined: the walk ends here (_start) */
  KILN_CFA_UNSUPPORTED = 6, /* a rule we do not evaluate: try frame pointers */
};

/* Where the caller's frame pointer is. */
enum kiln_reg_rule {
  KILN_REG_SAME = 0,      /* unchanged by this frame */
  KILN_REG_AT_CFA = 1,    /* saved at CFA + 8 * fp_offset */
  KILN_REG_AT_SP = 2,     /* saved at SP + 8 * fp_offset (signal frames) */
  KILN_REG_UNKNOWN = 3,   /* an expression or another register: lost */
};

/* How to unwind one frame: unwind_infos' value. */
struct kiln_unwind_info {
  __s16 cfa_offset; /* see kiln_cfa_rule */
  __u8 rules;       /* kiln_cfa_rule | kiln_reg_rule (frame pointer) << 4 */
  __s8 fp_offset;   /* in 8-byte words */
};

/* Of anything with `rules`: a kiln_unwind_info, or user space's full row. */
#define KILN_CFA_RULE_OF(x) ((x)->rules & 0xf)
#define KILN_FP_RULE_OF(x) ((x)->rules >> 4)

/* A row in unwind_rows (after its run's page index). */
#define KILN_ROW_PC_LOW(word) ((word) & 0xffffu)
#define KILN_ROW_INFO(word) ((word) >> 16)
#define KILN_PAGE_BITS 16
#define KILN_UNWIND_INFOS 65536 /* the most distinct rules: a row's 16 bits */

struct kiln_unwind_file {
  __u32 first_row;  /* the run's first word in unwind_rows */
  __u32 row_count;  /* the run's words; 0: not loaded, walk with frame pointers */
  __u32 flags;      /* KILN_FILE_* */
  __u32 first_page; /* pc >> KILN_PAGE_BITS of the run's first page */
};

/* The rows were evicted while processes map the file: the first walk that
 * needs them clears the flag and wakes user space, which builds them again
 * (without it the request waited for the consumer's next timed poll). */
#define KILN_FILE_WAKE_ON_MISS 0x1

#define KILN_MAPPING_VDSO 0x1
/* Anonymous executable memory (a JIT's code): no table, frame pointers
 * (V8, a JVM with -XX:+PreserveFramePointer and Python's perf trampolines
 * keep them). Without the entry the walk would end at the first JIT frame
 * as a pc in no mapping. */
#define KILN_MAPPING_JIT 0x2

struct kiln_unwind_mapping {
  __u32 file_slot;
  __u32 flags;
  __u64 bias; /* ELF vaddr = address - bias */
};

struct kiln_mapping_key {
  __u32 prefix_len; /* LPM: bits of (pid, address) that must match */
  __u32 pid;        /* big endian, like address */
  __u64 address;    /* big endian */
};

/* proc_state values: whether user space has loaded a process's mappings. */
#define KILN_PROCESS_REQUESTED 1 /* the BPF side asked; walk with frame pointers meanwhile */
#define KILN_PROCESS_LOADED 2    /* proc_mappings holds its executable mappings */

/* How many address bits a (pid, address) key has after the pid. */
#define KILN_MAPPING_KEY_PID_BITS 32

/* Why a user stack walk ended, counted per reason in walk_end_counts. */
enum kiln_walk_end {
  KILN_WALK_OUTERMOST = 0,      /* CFI said so (_start, thread start): a whole stack */
  KILN_WALK_FP_ZERO = 1,        /* frame-pointer walk reached fp == 0 */
  KILN_WALK_PC_NOT_MAPPED = 2,  /* a pc in no executable mapping of a loaded process */
  KILN_WALK_BAD_ADDRESS = 3,    /* return address 0 or non-canonical */
  KILN_WALK_READ_FAILED = 4,    /* bpf_probe_read_user failed (paged out, bad sp) */
  KILN_WALK_DEPTH = 5,          /* KILN_MAX_USER_FRAMES reached */
  KILN_WALK_NO_FP = 6,          /* no CFI here and no frame pointer to follow */
  KILN_WALK_KERNEL_THREAD = 7,  /* no user context at all */
  KILN_WALK_SP_NOT_GROWING = 8, /* the CFA did not move up: a loop in bad data */
  KILN_WALK_END_COUNT = 9,
};

#endif /* KILN_AGENT_BPF_UNWIND_ABI_H */
