/* kloop.h: the C contract the Lua side sees; ffi.cdef is built from this file. */
#ifndef KLOOP_H
#define KLOOP_H
#include <stddef.h>
#include <stdint.h>
/*
 * Rules for this header (checked by tests/spec/cdef_spec.lua): everything between
 * the includes and the closing #endif must parse with LuaJIT's ffi.cdef once lines
 * starting with '#' are dropped: enums instead of macros, no inline functions.
 * Functions never raise or exit: they return a kl_status and, on failure, fill
 * the caller's kl_err.
 */

typedef enum kl_status {
  KL_OK = 0,
  KL_EINVAL = 1,    /* bad argument from the caller */
  KL_ENOTFOUND = 2, /* a library, file or symbol is missing */
  KL_ESYS = 3,      /* a system call failed; msg has errno text */
  KL_ECUDA = 4,     /* the driver returned an error; code holds CUresult */
  KL_ETIMEOUT = 5,  /* a deadline passed */
  KL_ECLOSED = 6,   /* the peer closed its end or died */
  KL_ECOMPILE = 7,  /* compilation failed; the log says why */
  KL_ENOMEM = 8,
  KL_ENOPERM = 9 /* not permitted here (e.g. no access to GPU performance counters) */
} kl_status;

typedef struct kl_err {
  int status; /* a kl_status */
  int code;   /* library-specific code (CUresult, nvrtcResult, errno) */
  char msg[512];
} kl_err;

/* Versions of kloop and what it was built with. */
const char *kl_version(void);
const char *kl_curl_version(void);
const char *kl_sqlite_version(void);
const char *kl_cuda_home(void);

/* System helpers. */
double kl_now(void);                  /* monotonic seconds */
int kl_exe_path(char *buf, size_t n); /* /proc/self/exe; kl_status */
int kl_isatty(int fd);
int kl_file_readable(const char *path);
int kl_dir_writable(const char *path);
int kl_mkdir_p(const char *path); /* mkdir -p (mode 0777 less the umask), no shell; kl_status */
int kl_rm_rf(const char *path);   /* rm -rf, no shell, symlinks not followed; kl_status */
void kl_free(void *p);
uint64_t kl_hash64(const void *data, size_t n, uint64_t seed); /* FNV-1a, 64 bit */
int kl_getpid(void);
int kl_cpu_count(void);                   /* CPUs this process may run on (its affinity mask), at least 1 */
int kl_random_bytes(void *buf, size_t n); /* getrandom; kl_status */
/* Wipes NAME from environ and /proc/self/environ, then unsetenv: copies wiped, -1 bad name. */
int kl_env_scrub(const char *name);

/* Line editing for the REPL: libedit when it can be opened, plain stdio otherwise. */
int kl_line_init(const char *history_path); /* 1 when libedit is in use */
char *kl_line_read(const char *prompt);     /* malloc'd line without newline; NULL on EOF */
int kl_line_interrupted(void);              /* 1: the last kl_line_read ended at Ctrl-C (it returned NULL) */
void kl_line_add_history(const char *line);
int kl_line_save(void);

/* SIGINT: the binding layer turns it into a Lua error while a chunk runs. While a
   strategy runs (native.signals_run), SIGTERM and SIGHUP are handled the same way. */
int kl_sigint_pending(void);
int kl_sigint_signal(void); /* the signal that started the pending interruption, 0 if none */

/* CUDA driver, opened with dlopen: nothing here needs libcuda at link time. */
typedef struct kl_gpu_info {
  int driver_version; /* e.g. 13000 */
  int device_count;
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  int l2_bytes;
  int smem_per_block;       /* default limit */
  int smem_per_block_optin; /* with cuFuncSetAttribute */
  int smem_per_sm;
  int max_threads_per_block;
  int regs_per_block;
  int clock_khz;
  int mem_clock_khz;
  int mem_bus_width;
  int warp_size;
  int compute_mode; /* CUcomputemode: 0 default, 2 prohibited, 3 exclusive-process; -1 unknown */
  size_t total_mem;
  char uuid[48];
} kl_gpu_info;

int kl_cuda_load(kl_err *err);             /* dlopen libcuda.so.1; no cuInit */
int kl_cuda_init(int device, kl_err *err); /* cuInit + primary context, current on this thread */
int kl_cuda_info(int device, kl_gpu_info *info, kl_err *err);
/* Probe in a forked child (the caller never initializes CUDA): kl_status. */
int kl_cuda_probe_isolated(int device, kl_gpu_info *info, int timeout_ms, kl_err *err);

typedef struct kl_func_attrs {
  int num_regs;
  int static_smem;
  int local_bytes;
  int const_bytes;
  int max_threads;
  int ptx_version;
  int binary_version;
} kl_func_attrs;

int kl_cuda_module_load(const void *image, void **module, kl_err *err);
int kl_cuda_module_unload(void *module, kl_err *err);
int kl_cuda_function(void *module, const char *name, void **fn, kl_err *err);
/* A module-scope symbol (__constant__ or __device__): its device address and size in bytes;
   KL_ENOTFOUND when the module has none of that name. */
int kl_cuda_module_global(void *module, const char *name, uint64_t *dptr, size_t *bytes, kl_err *err);
int kl_cuda_func_attrs(void *fn, kl_func_attrs *a, kl_err *err);
int kl_cuda_func_set_dynamic_smem(void *fn, int bytes, kl_err *err);
int kl_cuda_alloc(size_t bytes, uint64_t *dptr, kl_err *err);
int kl_cuda_free(uint64_t dptr, kl_err *err);
int kl_cuda_h2d(uint64_t dst, const void *src, size_t bytes, kl_err *err);
int kl_cuda_d2h(void *dst, uint64_t src, size_t bytes, kl_err *err);
int kl_cuda_d2d(uint64_t dst, uint64_t src, size_t bytes, kl_err *err);
int kl_cuda_fill32(uint64_t dst, uint32_t value, size_t count, kl_err *err);
/* Page-locked host memory (cuMemAllocHost; kept for the worker's life, never freed) and
   copies to and from it queued on the default stream, in order with launches; the host
   waits with kl_cuda_sync. (Such memory is reachable from kernels under unified
   addressing: what it holds must not be secret while a candidate runs.) */
int kl_cuda_host_alloc(size_t bytes, void **p, kl_err *err);
int kl_cuda_h2d_async(uint64_t dst, const void *src, size_t bytes, kl_err *err);
int kl_cuda_d2h_async(void *dst, uint64_t src, size_t bytes, kl_err *err);
int kl_cuda_launch(void *fn, const unsigned *grid, const unsigned *block, unsigned smem, void **params,
                   kl_err *err);
int kl_cuda_sync(kl_err *err);
int kl_cuda_event_create(void **ev, kl_err *err);
int kl_cuda_event_record(void *ev, kl_err *err);
int kl_cuda_event_elapsed_ms(void *start, void *end, float *ms, kl_err *err);
int kl_cuda_mem_info(size_t *free_bytes, size_t *total_bytes, kl_err *err);
/* The device heap (in-kernel malloc) of the current context, before any kernel uses it. */
int kl_cuda_set_heap_limit(size_t bytes, kl_err *err);

/* NVML, opened with dlopen: clocks and throttling around timings. */
typedef struct kl_gpu_sample {
  unsigned sm_mhz;
  unsigned mem_mhz;
  unsigned temp_c;
  unsigned power_mw;
  unsigned long long throttle; /* NVML clocks-event (throttle) reason bits */
} kl_gpu_sample;
/* uuid as kl_gpu_info.uuid ("GPU-xxxxxxxx-xxxx-..."), index the fallback. */
int kl_nvml_sample(const char *uuid, int index, kl_gpu_sample *s, kl_err *err);
/* The compute capability NVML gives GPU `index` (NVML's order), without a CUDA context:
   a hint of the arch for compiles that start before the driver's probe. */
int kl_nvml_compute_capability(int index, int *major, int *minor, kl_err *err);

/* CUPTI, opened with dlopen; used in the worker, never inside a timed region. */
int kl_cupti_load(kl_err *err);
const char *kl_cupti_path(void); /* the library opened; "" before */
/* Kernel activity records: start/end of every kernel between start and stop. */
typedef struct kl_kernel_rec {
  uint64_t start_ns, end_ns;
  uint32_t correlation;
  int32_t grid[3], block[3];
  char name[128];
} kl_kernel_rec;
int kl_activity_start(kl_err *err);
/* The records since start or the last take: copies up to max, *n = records seen (may
   exceed max); take keeps recording, stop ends it. */
int kl_activity_take(kl_kernel_rec *recs, int max, int *n, int *dropped, kl_err *err);
int kl_activity_stop(kl_kernel_rec *recs, int max, int *n, int *dropped, kl_err *err);
/* The timeline (bench/eval_timeline.lua): copies and fills recorded too, after
   kl_activity_start, as records named "[memcpy KIND BYTES]" and "[memset BYTES]". */
int kl_activity_timeline(int on, kl_err *err);
/* CUPTI's clock, the one its records use (ns); 0 before CUPTI is loaded. */
uint64_t kl_cupti_now(void);
/* Hardware metrics (Profiler Host + Range Profiler: one range per kernel, kernel
   replay). kl_prof_new checks every metric name for a chip (e.g. "GH100", from
   kl_prof_chip) and builds the config image; it needs no GPU. The rest works on the
   current context. KL_ENOPERM: no access to the counters here. */
typedef struct kl_prof kl_prof;
int kl_prof_chip(int device, char *buf, size_t n, kl_err *err);
int kl_prof_new(const char *chip, const char *const *metrics, int n, kl_prof **p, kl_err *err);
int kl_prof_passes(kl_prof *p); /* replay passes the metrics need */
/* On the current context. user_replay = 0: CUPTI replays each kernel per pass itself
   (saving and restoring memory); 1: the caller runs start, launches, stop once per
   pass until stop reports every pass submitted (kl_prof_reconfigure between passes
   when start refuses), so it prepares the memory and caches before each pass. */
int kl_prof_enable(kl_prof *p, int max_ranges, int user_replay, kl_err *err);
int kl_prof_start(kl_prof *p, kl_err *err);
int kl_prof_stop(kl_prof *p, int *all_passes, kl_err *err);
int kl_prof_reconfigure(kl_prof *p, kl_err *err);
int kl_prof_decode(kl_prof *p, int *ranges, int *dropped, kl_err *err);
int kl_prof_values(kl_prof *p, int range, double *values, kl_err *err); /* one per metric */
void kl_prof_free(kl_prof *p);                                          /* disables the profiler too */
/* NVRTC, opened with dlopen. */
int kl_nvrtc_load(kl_err *err);
const char *kl_nvrtc_path(void); /* the library opened; "" before */
int kl_nvrtc_version(int *major, int *minor, kl_err *err);

typedef struct kl_compile_req {
  const char *source;
  const char *name;           /* program name shown in the log */
  const char *const *options; /* NVRTC options */
  int num_options;
  const char *const *header_names; /* in-memory headers (the task's folder) */
  const char *const *header_sources;
  int num_headers;
  const char *const *name_exprs; /* C++ entries ("gemm<128, 8>"): nvrtcAddNameExpression */
  int num_name_exprs;
  int nice; /* kl_compile_start: added to the child's niceness (nice(2)), 0: the parent's */
} kl_compile_req;

typedef struct kl_compile_res {
  int ok;    /* 1 when a cubin was produced */
  char *log; /* malloc'd; free with kl_free */
  size_t log_len;
  void *cubin; /* malloc'd; free with kl_free */
  size_t cubin_len;
  char *lowered; /* malloc'd: one lowered name per name expression, '\n' after each */
  size_t lowered_len;
  double seconds;
} kl_compile_res;

/* In-process compile; blocks for as long as NVRTC takes. */
int kl_nvrtc_compile(const kl_compile_req *req, kl_compile_res *res, kl_err *err);

/* Compile in a forked child, so a deadline can end it: start, then poll. */
typedef struct kl_compile_job {
  int pid;
  int fd;
  double started;
} kl_compile_job;
int kl_compile_start(const kl_compile_req *req, kl_compile_job *job, kl_err *err);
/* KL_OK with res filled when done; KL_ETIMEOUT when still running after wait_ms. */
int kl_compile_poll(kl_compile_job *job, int wait_ms, kl_compile_res *res, kl_err *err);
void kl_compile_kill(kl_compile_job *job);
/* Sets a running compile's niceness to the parent's plus nice (0-19): 0 when done, -1
   where it is not allowed (a lower niceness than it has needs privilege) or it ended. */
int kl_compile_renice(const kl_compile_job *job, int nice);

/* Host buffers: fill, poison, hash, compare. Backend independent. */
typedef enum kl_dtype {
  KL_F32 = 0,
  KL_F64 = 1,
  KL_F16 = 2,
  KL_BF16 = 3,
  KL_I32 = 4,
  KL_I64 = 5,
  KL_U32 = 6,
  KL_U8 = 7,
  KL_I8 = 8
} kl_dtype;

typedef enum kl_dist {
  KL_DIST_UNIFORM = 0, /* uniform(a, b) */
  KL_DIST_NORMAL = 1,  /* normal(mean a, stddev b) */
  KL_DIST_CONST = 2,   /* every element a */
  KL_DIST_INT = 3      /* integers uniform in [a, b] */
} kl_dist;

size_t kl_dtype_size(kl_dtype t);
int kl_buf_fill(void *p, kl_dtype t, size_t n, kl_dist d, double a, double b, uint64_t seed);
/* The parameters of the same fill on the device (kloop_fill): the integer range's low
   end and span, and the generator's key. KL_OK, or KL_EINVAL for a bad distribution. */
int kl_buf_fill_args(kl_dist d, double a, double b, uint64_t seed, double *lo, double *span, uint64_t *key);
uint32_t kl_poison_word(kl_dtype t); /* 32-bit pattern repeated over an output */
void kl_buf_poison(void *p, size_t bytes, uint32_t word);
uint64_t kl_buf_hash(const void *p, size_t bytes);

typedef struct kl_cmp {
  size_t n;
  size_t n_unwritten; /* elements still holding the poison pattern */
  int64_t first_unwritten;
  size_t n_nonfinite; /* NaN/Inf in out where ref is finite */
  int64_t first_nonfinite;
  size_t n_bad; /* |out-ref| > atol + rtol*|ref| */
  int64_t first_bad;
  double max_abs_err;
  int64_t worst_index;
  double worst_out, worst_ref;
  double err_norm; /* ||out-ref||_2 over finite pairs */
  double ref_norm; /* ||ref||_2 */
  double ref_max_abs;
} kl_cmp;

int kl_buf_compare(const void *out, kl_dtype out_t, const void *ref, kl_dtype ref_t, size_t n, double atol,
                   double rtol, uint32_t poison, int check_poison, kl_cmp *res);
/* First differing element index of two buffers of the same type, -1 if bit-identical,
   -2 for an unknown dtype. */
int64_t kl_buf_first_diff(const void *a, const void *b, kl_dtype t, size_t n);
int kl_buf_convert(const void *src, kl_dtype src_t, void *dst, kl_dtype dst_t, size_t n);

/* Guard zones and state digests. A region is a run of 32-bit words checked in one of
   three modes; kloop's CUDA kernel (kloop.eval.check_source) computes the same values
   on the device, bit for bit. value: mode DIGEST an order-independent sum of a per-word
   mix (position and seed dependent); modes GUARD and CONST the number of words that
   differ from the pattern, and then first = the lowest such index. */
typedef enum kl_region_mode {
  KL_REGION_DIGEST = 0, /* data: compare value with the digest of host truth */
  KL_REGION_GUARD = 1,  /* guard zone: word i must be kl_guard_word(i, seed) */
  KL_REGION_CONST = 2   /* every word must equal `word` */
} kl_region_mode;

typedef struct kl_region {
  uint64_t ptr; /* address of the first word (host or device) */
  uint64_t nwords;
  uint64_t seed;
  uint32_t mode; /* a kl_region_mode */
  uint32_t word; /* KL_REGION_CONST's word */
} kl_region;

typedef struct kl_region_result {
  uint64_t value; /* digest, or count of changed words */
  uint64_t first; /* ~index of the first changed word (0: none), as the GPU reduces it */
} kl_region_result;

uint32_t kl_guard_word(uint64_t i, uint64_t seed);
void kl_guard_fill(void *p, size_t nwords, uint64_t seed);
/* What the GPU's comparison kernel (kloop_compare, lua/kloop/eval/worker_client.lua)
   writes per block of elements: kl_buf_compare's sums, counts and firsts for that block;
   the worker merges them in block order. */
typedef struct kl_cmp_part {
  double err2, ref2, refmax, maxerr, worst_out, worst_ref;
  int64_t n_unwritten, first_unwritten, n_nonfinite, first_nonfinite, n_bad, first_bad, worst_index;
} kl_cmp_part;

/* Word i of the mask of seed: Philox4x32-10 keyed with seed, counter i / 4 (kl_buf.c). */
uint32_t kl_mask_word(uint64_t i, uint64_t seed);
/* The parts of one comparison (the host's, or the GPU's blocks), in order, into res. */
void kl_cmp_merge(const kl_cmp_part *parts, size_t nparts, size_t n, kl_cmp *res);
/* dst = src XOR the mask of seed, word by word (its own inverse): a reference kept on the
   device masked, so a candidate that finds it reads no values (nor, from a known value,
   the key). */
void kl_buf_mask(void *dst, const void *src, size_t nwords, uint64_t seed);
uint64_t kl_digest(const void *p, size_t nwords, uint64_t seed);
/* Checks regions of host memory (the host backend; the reference for the GPU kernel). */
void kl_regions_check(const kl_region *r, int n, kl_region_result *out);

/* Worker processes: framed messages over pipes, output captured apart. */
typedef struct kl_proc {
  int pid;
  int to_fd;        /* parent -> child requests */
  int from_fd;      /* child -> parent replies */
  int out_fd;       /* child's stdout+stderr */
  int exited;       /* 1 once reaped */
  int exit_status;  /* raw waitpid status */
  size_t out_total; /* bytes the child printed */
  size_t tail_len;
  char tail[4096]; /* last bytes of the child's output */
} kl_proc;

/* argv is NULL-terminated; env_keep is a NULL-terminated list of variable-name
   prefixes passed through (others are stripped); NULL keeps everything. */
int kl_proc_spawn(kl_proc *p, const char *const *argv, const char *const *env_keep, kl_err *err);
int kl_proc_send(kl_proc *p, const char *data, size_t n, kl_err *err);
/* Waits until one of n workers has a reply ready (or its channel ended): its index, or
   -1 after timeout_ms. Drains every worker's output meanwhile. */
int kl_proc_wait_any(kl_proc *const *ps, int n, int timeout_ms);
/* Waits up to timeout_ms for one reply, draining the child's output meanwhile. */
int kl_proc_recv(kl_proc *p, int timeout_ms, char **data, size_t *n, kl_err *err);
int kl_proc_kill(kl_proc *p);                /* SIGKILL and reap */
int kl_proc_close(kl_proc *p, int grace_ms); /* close pipes, wait, then kill */
/* Worker side: fds 3 (requests) and 4 (replies). */
int kl_chan_send(int fd, const char *data, size_t n, kl_err *err);
int kl_chan_recv(int fd, char **data, size_t *n, kl_err *err);

/* Host backend: candidate shared objects and the worker's sandbox. */
int kl_host_load(const char *path, void **handle, kl_err *err);
int kl_host_symbol(void *handle, const char *name, void **fn, kl_err *err);
/* A global variable of the object: its address and the size the object declares it with. */
int kl_host_global(void *handle, const char *name, void **ptr, size_t *bytes, kl_err *err);
int kl_host_unload(void *handle);
void *kl_host_alloc(size_t bytes); /* 64-byte aligned; NULL when out of memory */
void kl_host_free(void *p);
/* rlimits (address space, CPU seconds, no core, no file growth) and a seccomp
   allow-list that kills the process on any other system call (docs/SECURITY.md).
   read_dirs (NUL-separated, ended by an empty name; NULL: no confinement) are the
   folders whose files stay readable once Landlock confines the worker, which happens
   at the first kl_host_load, adding that object's folder (the compile cache).
   *landlock_abi: the kernel's Landlock ABI (> 0), or -errno where it has none. */
int kl_sandbox_enter(int64_t max_bytes, int cpu_seconds, const char *read_dirs, int *landlock_abi,
                     kl_err *err);

/* SQLite, a thin layer so the store (lua/kloop/store/db.lua) reaches it through this
   header. Opening sets a busy timeout, and a writable open WAL, synchronous=FULL and
   foreign keys (unless KL_DB_NO_SETUP: the caller identifies the file first). */
typedef struct kl_db kl_db;
typedef struct kl_stmt kl_stmt;

typedef enum kl_coltype {
  KL_COL_INTEGER = 1,
  KL_COL_FLOAT = 2,
  KL_COL_TEXT = 3,
  KL_COL_BLOB = 4,
  KL_COL_NULL = 5
} kl_coltype;

/* kl_db_open flags (0: read-write, created when missing). */
typedef enum kl_db_flag {
  KL_DB_READONLY = 1,  /* never writes the database; fails if it is missing */
  KL_DB_IMMUTABLE = 2, /* read-only and SQLite's immutable=1: no -wal/-shm companions are
                          opened or created (a read-only folder), the WAL is not read */
  KL_DB_NO_SETUP = 4   /* writable, but no pragmas run (nothing written at open) */
} kl_db_flag;

int kl_db_open(const char *path, int flags, kl_db **db, kl_err *err);
int kl_db_close(kl_db *db);
int kl_db_exec(kl_db *db, const char *sql, kl_err *err);
int64_t kl_db_last_insert_rowid(kl_db *db);
int kl_db_changes(kl_db *db);
int kl_db_prepare(kl_db *db, const char *sql, kl_stmt **stmt, kl_err *err);
int kl_stmt_bind_int64(kl_stmt *st, int idx, int64_t v);
int kl_stmt_bind_double(kl_stmt *st, int idx, double v);
int kl_stmt_bind_text(kl_stmt *st, int idx, const char *s, size_t n);
int kl_stmt_bind_blob(kl_stmt *st, int idx, const void *p, size_t n);
int kl_stmt_bind_null(kl_stmt *st, int idx);
/* KL_OK with *has_row = 1 for a row, 0 when done; an error status otherwise. */
int kl_stmt_step(kl_stmt *st, int *has_row, kl_err *err);
int kl_stmt_column_count(kl_stmt *st);
const char *kl_stmt_column_name(kl_stmt *st, int i);
int kl_stmt_column_type(kl_stmt *st, int i);
int64_t kl_stmt_column_int64(kl_stmt *st, int i);
double kl_stmt_column_double(kl_stmt *st, int i);
const char *kl_stmt_column_text(kl_stmt *st, int i, size_t *n);
int kl_stmt_reset(kl_stmt *st);
void kl_stmt_finalize(kl_stmt *st);

/* HTTP (libcurl multi): many POSTs in flight at once; the caller pulls finished
   requests with kl_http_poll (no callbacks into Lua). The client owns each request
   until poll returns it; the result's body is then the caller's (kl_http_result_free).
   A failed transfer is still a result: curl_code != 0 and error set. */
typedef struct kl_http kl_http;

typedef struct kl_http_result {
  int64_t id;    /* from kl_http_post */
  int status;    /* HTTP status; 0 when no response arrived */
  int curl_code; /* CURLcode; 0 when the transfer completed */
  char *body;    /* malloc'd, NUL-terminated; free with kl_http_result_free */
  size_t body_len;
  double total_s;        /* whole transfer, seconds */
  double retry_after_ms; /* retry-after-ms, else retry-after (seconds or date); -1 if absent */
  char request_id[128];  /* x-request-id / request-id header, for audit */
  char error[256];       /* curl error text when curl_code != 0 */
  int too_big;           /* 1: the reply passed the request's max_body and was cut off */
  int timed_out;         /* a kl_http_timeout_kind: which limit ended the transfer */
} kl_http_result;

/* Which limit ended a transfer (kl_http_result.timed_out). */
typedef enum kl_http_timeout_kind {
  KL_HTTP_TIMEOUT_NONE = 0,
  KL_HTTP_TIMEOUT_CONNECT = 1,    /* no connection within connect_ms */
  KL_HTTP_TIMEOUT_FIRST_BYTE = 2, /* connected, request sent, no byte of the reply within first_byte_ms */
  KL_HTTP_TIMEOUT_IDLE = 3,       /* the reply started, then nothing arrived for idle_ms */
  KL_HTTP_TIMEOUT_TOTAL = 4       /* the whole transfer passed total_ms */
} kl_http_timeout_kind;

/* Per-request limits for kl_http_post_ex; 0 in a field: no limit (max_body 0: 64 MB). */
typedef struct kl_http_limits {
  int connect_ms;
  int first_byte_ms;
  int idle_ms;
  int total_ms;
  size_t max_body;
} kl_http_limits;

int kl_http_new(kl_http **client, kl_err *err);
void kl_http_free(kl_http *client); /* cancels what is still in flight */
/* headers: nheaders "Name: value" strings, copied. timeout_ms <= 0: no limit. */
int kl_http_post(kl_http *client, const char *url, const char *const *headers, int nheaders, const char *body,
                 size_t body_len, int timeout_ms, int64_t *id, kl_err *err);
/* Drives transfers for up to wait_ms; *done = 1 with res filled for one finished
   request, *done = 0 when none finished in time (with nothing pending it just waits). */
/* The same with separate connect, first-byte, idle and total limits and a reply cap. */
int kl_http_post_ex(kl_http *client, const char *url, const char *const *headers, int nheaders,
                    const char *body, size_t body_len, const kl_http_limits *limits, int64_t *id,
                    kl_err *err);
int kl_http_poll(kl_http *client, int wait_ms, kl_http_result *res, int *done, kl_err *err);
int kl_http_cancel(kl_http *client, int64_t id); /* KL_ENOTFOUND when not pending */
int kl_http_pending(kl_http *client);            /* requests not yet returned by poll */
void kl_http_result_free(kl_http_result *res);

/* cuBLAS, opened with dlopen: a task's library reference time, measured in a short-lived
   child that called kl_cuda_init (never in kloop's main process). */
int kl_blas_load(kl_err *err);
const char *kl_blas_path(void); /* the library opened; "" before */
/* A handle on the current context, math mode CUBLAS_DEFAULT_MATH (fp32, no TF32);
   version and math_mode (when not NULL) get cuBLAS's version and the mode it reports. */
int kl_blas_create(void **handle, int *version, int *math_mode, kl_err *err);
int kl_blas_destroy(void *handle);
/* Row-major C[m,n] = A[m,k] B[k,n], float32, alpha 1, beta 0, on the default stream. */
int kl_blas_sgemm_rm(void *handle, int m, int n, int k, uint64_t a, uint64_t b, uint64_t c, kl_err *err);

/* Remote workers: `kloop --worker-remote SOCK BACKEND` relays its fds 3/4 to a kloop-mpi
   socket (kl_relay.c). After a hello line ("kloop-relay 1 BACKEND PREFIX,PREFIX,...\n")
   the proxy writes the driver's bytes to the socket as they come; the far side answers in
   chunks: one type byte, a 4-byte little-endian length, the payload. */
typedef enum kl_relay_chunk {
  KL_RELAY_DATA = 68,   /* 'D': reply-channel bytes, for fd 4 */
  KL_RELAY_OUTPUT = 79, /* 'O': the worker's stdout/stderr, for the proxy's stderr */
  KL_RELAY_END = 69     /* 'E': the worker ended: int32 kind, int32 code, then words */
} kl_relay_chunk;
typedef enum kl_relay_end_kind {
  KL_RELAY_EXITED = 0,   /* code: its exit status */
  KL_RELAY_SIGNALED = 1, /* code: the signal */
  KL_RELAY_LOST = 2      /* the connection ended without an END chunk (a rank died) */
} kl_relay_end_kind;
typedef struct kl_relay_end {
  int kind; /* a kl_relay_end_kind */
  int code;
  char what[256]; /* how it ended, in words */
} kl_relay_end;
/* Connects to sock_path, sends hello, relays in_fd -> socket and the socket's chunks ->
   out_fd / log_fd until either side ends; fills end. Blocks; returns KL_OK once the
   connection is over (however it ended), an error when it could not connect. */
int kl_relay_run(const char *sock_path, const char *hello, int in_fd, int out_fd, int log_fd,
                 kl_relay_end *end, kl_err *err);
/* Ends this process by signo (default action, no core dump): a proxy mirrors its
   remote worker's death so the driver's message names the signal. Returns only if it could not. */
int kl_relay_die(int signo);

#endif
