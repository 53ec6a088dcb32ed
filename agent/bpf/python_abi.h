/* What kiln-agent's user space (python_tracker.cpp) tells the BPF walker
 * about CPython processes, and how the walker records Python frames. Shared
 * by BPF C and C++, so plain C with kernel fixed-width types.
 *
 * Two maps:
 *   py_procs    HASH pid -> kiln_py_proc: where the evaluation loop is in
 *               the process (absolute addresses) and the layout of the
 *               interpreter's structures, for each process user space found
 *               a CPython it can read in;
 *   py_threads  HASH thread key -> kiln_py_thread: the thread's
 *               PyThreadState, found by user space walking the interpreter's
 *               thread list, and the identity that thread state records,
 *               which the walker checks again. 3.11+: the key is the tid as
 *               the host sees it, the identity native_thread_id, the tid in
 *               the process's own pid namespace (a container's differs);
 *               3.10: both are thread_id, pthread_self(), which on x86-64 is
 *               the thread's fs base.
 *
 * When the native walk reaches a pc in the evaluation loop (the function or
 * its split-off .cold part), it records the Python frames that C call is
 * running, innermost first, instead of the loop's own frame, then resumes
 * native unwinding from that frame: kernel -> native -> Python -> native
 * (a C extension) -> Python ... in call order.
 *
 * A Python frame is one user frame entry with bit 63 set: bits 0-46 the
 * code object's address, bits 47-62 the index of the instruction being
 * executed, in 2-byte code units (KILN_PY_NO_INDEX when not known or
 * beyond 32,765; KILN_PY_NOT_STARTED for a frame before its first
 * instruction, f_lasti -1, which Python gives its def line). User
 * addresses never have bit 63 set.
 */
#ifndef KILN_AGENT_BPF_PYTHON_ABI_H
#define KILN_AGENT_BPF_PYTHON_ABI_H

#define KILN_PY_FRAME_BIT (1ULL << 63)
#define KILN_PY_INDEX_SHIFT 47
#define KILN_PY_CODE_MASK ((1ULL << KILN_PY_INDEX_SHIFT) - 1)
#define KILN_PY_NO_INDEX 0xffffULL
#define KILN_PY_NOT_STARTED 0xfffeULL

/* How one C call of the evaluation loop maps to Python frames. */
enum kiln_py_model {
  KILN_PY_MODEL_ONE_FRAME = 1, /* 3.10: one frame per C call; f_lasti counts code units */
  KILN_PY_MODEL_IS_ENTRY = 2,  /* 3.11: frames up to the one whose is_entry byte is set */
  KILN_PY_MODEL_CSTACK = 3,    /* 3.12+: frames up to a shim frame owned by the C stack */
};

/* Offsets in bytes; 0xffff = the field does not exist in this version. */
struct kiln_py_layout {
  __u16 model;               /* kiln_py_model */
  __u16 tstate_frame;        /* PyThreadState: the current frame (3.10, 3.13+) or cframe (3.11, 3.12) */
  __u16 cframe_frame;        /* _PyCFrame.current_frame, or 0xffff when tstate_frame is the frame */
  __u16 tstate_native_tid;   /* PyThreadState.native_thread_id, thread_id for 3.10 */
  __u16 frame_previous;      /* f_back (3.10), previous */
  __u16 frame_code;          /* f_code, f_executable (3.13+) */
  __u16 frame_instr;         /* f_lasti (3.10, an int), prev_instr (3.11, 3.12), instr_ptr (3.13+) */
  __u16 frame_entry;         /* is_entry (3.11) or owner (3.12+): one byte */
  __u16 code_adaptive;       /* PyCodeObject.co_code_adaptive (3.11+) */
  __u8 owner_cstack;         /* the owner value of a C-stack shim frame (CSTACK model) */
  __u8 code_tag_bits;        /* low bits of frame_code that tag it (3.14+: a _PyStackRef) */
  __u32 reserved;
};

struct kiln_py_thread {
  __u64 tstate;
  __u64 ident;
};

struct kiln_py_proc {
  __u64 eval_start, eval_end; /* _PyEval_EvalFrameDefault, absolute addresses */
  __u64 cold_start, cold_end; /* its .cold part when the symbols name it, else 0 */
  struct kiln_py_layout layout;
};

#endif /* KILN_AGENT_BPF_PYTHON_ABI_H */
