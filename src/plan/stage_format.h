/*
 * stage_format.h - the files of a stage directory (docs/staging.md, format
 * 2): index records, the movers' progress, the manifest, the names.  Pure
 * encoding and text: no MPI, no file.  The Python tool (aggio stage)
 * reads the same format; the two are tested against each other.
 */
#ifndef AGGIO_STAGE_FORMAT_H
#define AGGIO_STAGE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define AGGIO_STAGE_MAGIC 0x49534741u /* "AGSI": the record carries its data's CRC */
#define AGGIO_STAGE_MAGIC_NOCRC 0x52534741u /* "AGSR": the record's own CRC only */
#define AGGIO_STAGE_REC 64            /* an index record */
#define AGGIO_STAGE_DRAINED 32        /* a writer's .drained file */
#define AGGIO_STAGE_HEAD "aggio stage 2"

/* One staged write: `length` bytes for `offset` of the final file, at
 * `data_off` of the writer's .data file.  Its age among every writer's
 * records is (epoch, calls, time): the syncs and the collective calls of
 * the file before it (the same counts on every rank), then the clock;
 * within one writer the age never decreases with seq. */
struct aggio__stage_rec {
  uint32_t epoch;
  uint64_t seq, offset, length, data_off;
  uint64_t calls, time_ns;
  uint32_t data_crc;
  int has_data_crc; /* 0: data_crc is 0 and means nothing (magic AGSR) */
};

/* Which of two writers' records is older (<0), newer (>0): (epoch, calls,
 * time), then rank, then seq.  The order in which a replay writes every
 * writer's records of a session, so that the newest write of each byte
 * wins, as it did in the program when a barrier (not a sync) ordered two
 * ranks' writes of the same bytes (HDF5's fill values, then the data). */
int aggio__stage_rec_older(const struct aggio__stage_rec *a, int rank_a,
                           const struct aggio__stage_rec *b, int rank_b);

/* CRC-32 (IEEE 802.3, zlib's crc32: start with 0, feed pieces in order). */
uint32_t aggio__crc32(uint32_t crc, const void *buf, size_t len);

void aggio__stage_rec_encode(const struct aggio__stage_rec *r,
                             unsigned char out[AGGIO_STAGE_REC]);
/* The record at position seq of an index, if it is one: magic, seq,
 * record CRC, a length of at least 1 and bytes within a .data file of
 * data_size.  0, or -1 for anything else (a hole, a torn record).  The
 * data's CRC, when the record has one, is the caller's to check (it
 * needs the bytes). */
int aggio__stage_rec_decode(const unsigned char in[AGGIO_STAGE_REC], uint64_t seq,
                            int64_t data_size, struct aggio__stage_rec *r);

/* The movers' progress: records moved in order, bytes moved, the time
 * they started and the time of this update. */
struct aggio__stage_drained {
  uint64_t records, bytes;
  double started, updated;
};
void aggio__stage_drained_encode(const struct aggio__stage_drained *d,
                                 unsigned char out[AGGIO_STAGE_DRAINED]);

/* FNV-1a, 64 bits: the key of a final file's stage directory. */
uint64_t aggio__stage_key(const char *abs_path);
/* "<stage_dir>/<base>.<key>": the stage directory of the final file at
 * abs_path (absolute).  0, or -1 when out is too small. */
int aggio__stage_dir_of(const char *stage_dir, const char *abs_path, char *out, size_t len);
/* "<dir>/<session>.<rank>.<what>" (what: data, index, drained). */
int aggio__stage_writer_path(const char *dir, const char *session, int rank,
                             const char *what, char *out, size_t len);
/* The name "<session>.<rank>.index" parsed: 0 with session (17 bytes) and
 * rank, or -1 when it is no index file's name. */
int aggio__stage_index_name(const char *name, char session[17], int *rank);

/* The manifest's text for abs_path; 0, or -1 when out is too small. */
int aggio__stage_manifest_text(const char *abs_path, char *out, size_t len);
/* The final file a manifest names: 0, or -1 with why in msg. */
int aggio__stage_manifest_parse(const char *text, char *final, size_t len, char *msg,
                                size_t msglen);

#endif
