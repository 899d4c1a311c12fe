/*
 * hints.h - the hint list (single source of truth), the struct holding the
 * hints in effect for one file, and MPI-free parsing of hint strings:
 * values, AGGIO_HINTS (Cray MPICH_MPIIO_HINTS syntax) and hints files
 * (ROMIO_HINTS syntax).
 *
 * Precedence, lowest to highest (enum aggio__hint_source): built-in
 * defaults < ROMIO_HINTS file < AGGIO_HINTS_FILE < MPI_Info passed by the
 * program < MPICH_MPIIO_HINTS (and the MPICH_MPIIO_* switches) <
 * AGGIO_HINTS (and the AGGIO_* switches).  The environment overrides the
 * program so that a user can change hints without recompiling, as Cray's
 * MPICH_MPIIO_HINTS does; aggio's own variables win over the Cray ones
 * because they are the more specific request (docs/hints.md).  The
 * ROMIO_HINTS file sits below MPI_Info, as ROMIO puts it; then ROMIO's rule
 * between hints is applied (aggio__hints_romio_rules).
 */
#ifndef AGGIO_HINTS_H
#define AGGIO_HINTS_H

#include "strategy_ids.h"

#include <stddef.h>
#include <stdint.h>

/* Kinds of hint values. */
enum aggio__hint_kind {
  AGGIO_HK_TRISTATE, /* enable | disable | automatic (also: auto, true, false) */
  AGGIO_HK_BOOL,     /* true | false (also: enable, disable, 1, 0, yes, no) */
  AGGIO_HK_INT,      /* non-negative integer */
  AGGIO_HK_SIZE,     /* non-negative byte count; suffixes k, m, g (binary) */
  AGGIO_HK_STRING,   /* free text (validated by the user of the hint) */
  AGGIO_HK_STRATEGY  /* a strategy's name (strategies.def) */
};

enum aggio__tristate { AGGIO_DISABLE = 0, AGGIO_ENABLE = 1, AGGIO_AUTOMATIC = 2 };

/* aggio_strategy's values (aggio__hint_value.num) are the strategies' ids
 * (strategy_ids.h, from strategies.def); .str is the strategy's name. */

/*
 * X(field, "key", kind, "default", must_match, "description")
 * must_match: ranks must pass the same value (checked collectively at open
 * and set_info); differing values are an error on every rank.
 */
#define AGGIO_HINT_LIST(X)                                                                   \
  X(cb_write, "romio_cb_write", AGGIO_HK_TRISTATE, "automatic", 1,                           \
    "collective buffering for collective writes")                                            \
  X(cb_read, "romio_cb_read", AGGIO_HK_TRISTATE, "automatic", 1,                             \
    "collective buffering for collective reads")                                             \
  X(cb_nodes, "cb_nodes", AGGIO_HK_INT, "0", 1,                                              \
    "maximum number of aggregators (0: as many as cb_config_list gives)")                    \
  X(cb_buffer_size, "cb_buffer_size", AGGIO_HK_SIZE, "16777216", 1,                          \
    "bytes each aggregator moves per round")                                                 \
  X(cb_config_list, "cb_config_list", AGGIO_HK_STRING, "*:1", 1,                             \
    "aggregators per node, ROMIO syntax host:count,...")                                     \
  X(striping_unit, "striping_unit", AGGIO_HK_SIZE, "0", 1,                                   \
    "stripe size; file domains align to it (0: file system block)")                          \
  X(striping_factor, "striping_factor", AGGIO_HK_INT, "0", 1,                                \
    "stripe count (only where the file system stripes)")                                     \
  X(no_indep_rw, "romio_no_indep_rw", AGGIO_HK_BOOL, "false", 1,                             \
    "promise of collective I/O only: non-aggregators never open the file")                   \
  X(ds_write, "romio_ds_write", AGGIO_HK_TRISTATE, "automatic", 1,                           \
    "read-modify-write (data sieving) over holes in writes")                                 \
  X(ds_read, "romio_ds_read", AGGIO_HK_TRISTATE, "automatic", 1,                             \
    "read whole ranges over holes (data sieving) in reads")                                  \
  X(ind_rd_buffer_size, "ind_rd_buffer_size", AGGIO_HK_SIZE, "4194304", 1,                 \
    "ROMIO's data-sieving buffer for independent reads: kept and reported, aggio has none")  \
  X(ind_wr_buffer_size, "ind_wr_buffer_size", AGGIO_HK_SIZE, "524288", 1,                  \
    "ROMIO's data-sieving buffer for independent writes: kept and reported, aggio has none") \
  X(strategy, "aggio_strategy", AGGIO_HK_STRATEGY, "auto", 1,                                \
    "aggregation strategy: auto, or a strategy's name (docs/strategies.md)")                 \
  X(write_behind, "aggio_write_behind", AGGIO_HK_TRISTATE, "automatic", 1,                   \
    "collective writes return once their data is in the node cache (auto's choice)")         \
  X(write_behind_size, "aggio_write_behind_size", AGGIO_HK_SIZE, "0", 1,                     \
    "node-cache bytes per aggregator (0: 2 x cb_buffer_size)")                               \
  X(write_behind_delay, "aggio_write_behind_delay", AGGIO_HK_INT, "200", 1,                 \
    "milliseconds a block written behind the calls may wait in memory before it is written "   \
    "(0: until full, evicted or flushed)")                                                     \
  X(node_aggregators, "aggio_node_aggregators", AGGIO_HK_INT, "0", 1,                       \
    "node_local: aggregators per node (0: those cb_config_list names, at least 1)")          \
  X(direct_io, "aggio_direct_io", AGGIO_HK_TRISTATE, "automatic", 1,                         \
    "O_DIRECT for large aligned writes: enable, disable, auto")                              \
  X(direct_min, "aggio_direct_min", AGGIO_HK_SIZE, "0", 1,                                  \
    "smallest independent write sent to the device with direct I/O (0: automatic: from 4 "     \
    "MiB, and from 1 MiB where the file measured direct writes faster)")                     \
  X(early_writeback, "aggio_early_writeback", AGGIO_HK_TRISTATE, "automatic", 1,            \
    "large independent writes through the page cache start their write-back at once, on an "   \
    "I/O thread (automatic: requests of 1 MiB and more)")                                     \
  X(node_shm, "aggio_node_shm", AGGIO_HK_TRISTATE, "automatic", 1,                          \
    "ranks copy into same-node aggregators through shared memory")                           \
  X(shared_fp, "aggio_shared_fp", AGGIO_HK_TRISTATE, "automatic", 1,                        \
    "the shared file pointer's window, made at open (disable: shared-pointer calls fail)")   \
  X(one_round, "aggio_one_round", AGGIO_HK_TRISTATE, "automatic", 1,                      \
    "a collective call whose file's history predicts independent I/O does its I/O before "   \
    "its summary and agrees once (disable: every call agrees on its summary, then on its "  \
    "outcome)")                                                                              \
  X(pipeline, "aggio_pipeline", AGGIO_HK_TRISTATE, "automatic", 1,                           \
    "aggregators write one buffer while filling the next (I/O thread)")                      \
  X(exchange, "aggio_exchange", AGGIO_HK_STRING, "automatic", 1,                           \
    "two-phase exchange: two_sided (messages), rma (one-sided puts/gets), automatic")       \
  X(cb_domains, "aggio_cb_domains", AGGIO_HK_STRING, "automatic", 1,                       \
    "two-phase file domains: contiguous, stripe_cyclic (aggregator g of G takes stripes g, "  \
    "g+G, ...), automatic (stripe_cyclic on a subfiled file, each aggregator on one "       \
    "subfile)")                                                                             \
  X(cray_cb_nodes_multiplier, "cray_cb_nodes_multiplier", AGGIO_HK_INT, "1", 1,              \
    "aggregators per stripe: multiplies the aggregator count (capped by ranks)")           \
  X(cray_cb_write_lock_mode, "cray_cb_write_lock_mode", AGGIO_HK_INT, "0", 1,                \
    "collective-buffering writes on Lustre: 0 normal, 1 group lock, 2 lock ahead")         \
  X(cray_nocb_write_lock_mode, "cray_nocb_write_lock_mode", AGGIO_HK_INT, "0", 1,            \
    "writes without collective buffering on Lustre: 0 normal, 1 group lock, 2 lock ahead") \
  X(storage, "aggio_storage", AGGIO_HK_STRING, "posix", 1,                                   \
    "storage back end, chosen at open: posix, null (writes discarded, reads zeros), or "      \
    "subfile (as aggio_subfiles=auto when that is 0)")                                       \
  X(subfiles, "aggio_subfiles", AGGIO_HK_STRING, "0", 1,                                     \
    "a new file is stored as M subfiles beside a layout file: 0 off, auto (one per node), "  \
    "or M (docs/subfiling.md)")                                                               \
  X(subfile_stripe, "aggio_subfile_stripe", AGGIO_HK_SIZE, "0", 1,                            \
    "a new subfiled file's stripe (0: striping_unit, else 1 MiB)")       \
  X(stage_dir, "aggio_stage_dir", AGGIO_HK_STRING, "", 1,                                    \
    "stage writes in this node-local directory; movers copy them to the file behind the "    \
    "program (empty: off; docs/staging.md)")                                                  \
  X(stage_drain, "aggio_stage_drain", AGGIO_HK_STRING, "background", 1,                        \
    "when staged bytes move to the file: background, at_close, none (aggio stage drain)")    \
  X(stage_movers, "aggio_stage_movers", AGGIO_HK_INT, "2", 1,                                  \
    "movers per node, shared by its processes (each has at least one)")                       \
  X(stage_merge, "aggio_stage_merge", AGGIO_HK_STRING, "node", 1,                              \
    "who moves a rank's staged writes: node (the movers of the node's first rank move every "  \
    "rank's, joining adjacent ones) or rank (each rank its own)")                              \
  X(stage_sync, "aggio_stage_sync", AGGIO_HK_STRING, "final", 1,                               \
    "what sync waits for on a staged file: final (the file's device) or stage")               \
  X(stage_checksum, "aggio_stage_checksum", AGGIO_HK_STRING, "auto", 1,                        \
    "staged bytes carry a CRC-32 checked when a stage is replayed: data, record (the index "  \
    "record's only), auto (record on a memory file system such as /dev/shm, else data)")      \
  X(emulate_nodes, "aggio_emulate_nodes", AGGIO_HK_INT, "0", 1,                              \
    "split each node's ranks into N emulated nodes (0: real topology)")                      \
  X(placement, "aggio_placement", AGGIO_HK_STRING, "auto", 1,                               \
    "aggregator placement: greedy, shortest, longest, topology, auto")                       \
  X(placement_scope, "aggio_placement_scope", AGGIO_HK_STRING, "file", 1,                    \
    "topology placement made per file (at open) or per call (two_phase, from its volumes)") \
  X(topology_file, "aggio_topology_file", AGGIO_HK_STRING, "", 1,                            \
    "network topology description file (docs/topology.md)")                                  \
  X(topology_slurm, "aggio_topology_slurm", AGGIO_HK_STRING, "", 1,                          \
    "Slurm topology.conf path (empty: /etc/slurm/topology.conf if present; none: off)")      \
  X(stats, "aggio_stats", AGGIO_HK_BOOL, "false", 1, "print statistics at close")           \
  X(timers, "aggio_timers", AGGIO_HK_BOOL, "false", 1, "print phase timers at close")       \
  X(placement_display, "aggio_aggregator_placement_display", AGGIO_HK_BOOL, "false", 1,      \
    "print aggregator placement at open")                                                    \
  X(trace, "aggio_trace", AGGIO_HK_STRING, "", 1, "write a per-operation trace to this path") \
  X(trace_memory, "aggio_trace_memory", AGGIO_HK_SIZE, "67108864", 0,                        \
    "trace buffer bytes per rank; records beyond it are counted as dropped")                 \
  X(passthrough, "aggio_passthrough", AGGIO_HK_BOOL, "false", 1,                             \
    "libaggio-mpiio: MPI_File_* calls on this file go to the MPI library's own MPI-IO")

#define AGGIO_HINT_STRLEN 256

struct aggio__hint_value {
  int64_t num;                   /* parsed value for non-string kinds */
  char str[AGGIO_HINT_STRLEN];   /* canonical text of the value */
  int set;                       /* 0 default, else the source that set it */
  char ignored[AGGIO_HINT_STRLEN]; /* non-empty: why it is not honoured */
};

struct aggio__hints {
#define AGGIO__HINT_FIELD(field, key, kind, def, mm, doc) struct aggio__hint_value field;
  AGGIO_HINT_LIST(AGGIO__HINT_FIELD)
#undef AGGIO__HINT_FIELD
  /* Warnings about malformed hints ("; "-separated), reported through
   * aggio_file_get_info (key aggio_hint_warnings) and AGGIO_HINTS_DISPLAY:
   * the library prints nothing unasked. */
  char warnings[1024];
};

/* Where a hint came from (aggio__hint_value.set), lowest precedence first. */
enum aggio__hint_source {
  AGGIO_HS_DEFAULT = 0,
  AGGIO_HS_ROMIO_FILE = 1, /* ROMIO_HINTS (a hints file in ROMIO's format) */
  AGGIO_HS_FILE = 2,       /* AGGIO_HINTS_FILE */
  AGGIO_HS_INFO = 3,       /* MPI_Info */
  AGGIO_HS_CRAY = 4,       /* MPICH_MPIIO_HINTS and the MPICH_MPIIO_* switches */
  AGGIO_HS_ENV = 5,        /* AGGIO_HINTS and the AGGIO_* switches */
  AGGIO_HS_COUNT
};

/* The name of a source as the display and get_info print it ("default",
 * "ROMIO_HINTS", ...); "default" for an unknown value. */
const char *aggio__hint_source_name(int source);

struct aggio__hint_desc {
  const char *key;
  enum aggio__hint_kind kind;
  const char *def;
  int must_match;
  const char *doc;
  size_t offset; /* offsetof the field in struct aggio__hints */
};

/* The table generated from AGGIO_HINT_LIST, and its length. */
extern const struct aggio__hint_desc aggio__hint_table[];
extern const size_t aggio__hint_count;

void aggio__hints_defaults(struct aggio__hints *h);

/* The canonical text of the value in effect: v's own, except for a numeric
 * hint (integer, size) marked ignored, whose default is in effect, since
 * aggio applies nothing of the value asked (a stripe count on a file system
 * that does not stripe, a lock mode off Lustre).  get_info reports this, so
 * that programs that parse numeric hints (HDF5, PnetCDF) read a number. */
const char *aggio__hint_effective(const struct aggio__hint_desc *d,
                                  const struct aggio__hint_value *v);

/* Looks up a key (exact, case-sensitive as in ROMIO); NULL if unknown. */
const struct aggio__hint_desc *aggio__hint_find(const char *key);
struct aggio__hint_value *aggio__hint_slot(struct aggio__hints *h,
                                           const struct aggio__hint_desc *d);

/* Parses `value` for a hint of `kind`.  Returns 0 and fills *num and the
 * canonical text (size canon_len), or -1 with a reason in err. */
int aggio__hint_parse_value(enum aggio__hint_kind kind, const char *value,
                            int64_t *num, char *canon, size_t canon_len,
                            char *err, size_t errlen);

/* Sets one hint from `source`.  Returns 0 when applied; 1 when the key is
 * not an aggio/ROMIO hint (the caller may pass it through); -1 when the
 * value is malformed: the hint keeps its previous value and `warn` says why. */
int aggio__hints_set(struct aggio__hints *h, const char *key, const char *value,
                     enum aggio__hint_source source, char *warn, size_t warnlen);

/* ROMIO's rule between hints, applied after every source: romio_no_indep_rw
 * true makes romio_cb_read enable (what was asked stays in .ignored), as
 * ROMIO's ADIOI_GEN_SetInfo does; romio_cb_write is left alone, since with
 * romio_no_indep_rw it names node-local writing (docs/hints.md). */
void aggio__hints_romio_rules(struct aggio__hints *h);

/* The hints as the SimGrid build (AGGIO_SIMGRID, SIMULATION.md) applies
 * them after every source: SMPI simulates MPI calls, not an application's
 * threads, shared memory or POSIX I/O, so the library takes the paths these
 * hints already select without them: aggio_storage=null, aggio_pipeline,
 * aggio_write_behind, aggio_node_shm and aggio_direct_io disabled,
 * aggio_shared_fp disabled (SMPI's one-sided windows cost ranks² simulated
 * calls per open and close), and
 * aggio_strategy=write_behind (a node cache written by I/O threads) and
 * node_local (data handed over in node memory) back to auto.  A value the user set otherwise is kept marked ignored. */
void aggio__hints_simulated(struct aggio__hints *h);

/* Callback for the two string formats: one key/value pair at a time. */
typedef void (*aggio__hint_cb)(void *ctx, const char *key, const char *value);

/* AGGIO_HINTS syntax (Cray MPICH_MPIIO_HINTS):
 *   pattern:key=value:key=value,pattern2:key=value
 * Each pattern is a shell glob (fnmatch) tested against the file path as
 * given to open, and against its basename; pairs of every matching entry are
 * reported in order.  cb_config_list may be written unquoted
 * (cb_config_list=*:8): a field without '=' right after it continues its
 * value.  Returns 0, or -1 with the first syntax error in err (well-formed
 * entries are still reported). */
int aggio__hints_parse_env(const char *spec, const char *path, aggio__hint_cb cb,
                           void *ctx, char *err, size_t errlen);

/* MPICH_MPIIO_HINTS, as Cray MPICH applies it: the same syntax, but only
 * the first entry whose pattern matches the file counts (later entries are
 * still checked for syntax). */
int aggio__hints_parse_cray(const char *spec, const char *path, aggio__hint_cb cb,
                            void *ctx, char *err, size_t errlen);

/* Hints file syntax (ROMIO_HINTS): one "key value" per line, '#' comments,
 * blank lines ignored.  text holds len bytes (the whole file; it need not
 * end in NUL): a line holding a NUL byte is an error and is skipped, the
 * lines after it still count.  Returns 0, or -1 with the first bad line in
 * err. */
int aggio__hints_parse_file(const char *text, size_t len, aggio__hint_cb cb, void *ctx,
                            char *err, size_t errlen);

#endif
