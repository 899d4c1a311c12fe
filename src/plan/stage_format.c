/*
 * stage_format.c - the stage directory's formats (stage_format.h,
 * docs/staging.md).  Little-endian whatever the host, so that a stage
 * written on one machine drains on another.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_format.h"

/* ---- CRC-32 -------------------------------------------------------------------- */

/* Slicing by 8 (eight bytes per step, one table per byte position): the
 * checksum runs on every staged byte in the write path, so it must be
 * far faster than the stage tier (one byte at a time is ~0.4 GB/s). */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[0][n] = c;
  }
  for (int t = 1; t < 8; t++)
    for (int n = 0; n < 256; n++)
      crc_table[t][n] =
          (crc_table[t - 1][n] >> 8) ^ crc_table[0][crc_table[t - 1][n] & 0xff];
}

uint32_t aggio__crc32(uint32_t crc, const void *buf, size_t len) {
  pthread_once(&crc_once, crc_init);
  const unsigned char *p = buf;
  uint32_t c = ~crc;
  for (; len >= 8; p += 8, len -= 8) {
    uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                       (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                  (uint32_t)p[7] << 24;
    c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
        crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
        crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
        crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
  }
  while (len--)
    c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

/* ---- little-endian fields ------------------------------------------------------ */

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* ---- records ------------------------------------------------------------------- */

void aggio__stage_rec_encode(const struct aggio__stage_rec *r,
                             unsigned char out[AGGIO_STAGE_REC]) {
  put32(out, r->has_data_crc ? AGGIO_STAGE_MAGIC : AGGIO_STAGE_MAGIC_NOCRC);
  put32(out + 4, r->epoch);
  put64(out + 8, r->seq);
  put64(out + 16, r->offset);
  put64(out + 24, r->length);
  put64(out + 32, r->data_off);
  put64(out + 40, r->calls);
  put64(out + 48, r->time_ns);
  put32(out + 56, r->has_data_crc ? r->data_crc : 0);
  put32(out + 60, aggio__crc32(0, out, 60));
}

int aggio__stage_rec_decode(const unsigned char in[AGGIO_STAGE_REC], uint64_t seq,
                            int64_t data_size, struct aggio__stage_rec *r) {
  uint32_t magic = get32(in);
  if ((magic != AGGIO_STAGE_MAGIC && magic != AGGIO_STAGE_MAGIC_NOCRC) ||
      get32(in + 60) != aggio__crc32(0, in, 60))
    return -1;
  r->has_data_crc = magic == AGGIO_STAGE_MAGIC;
  r->epoch = get32(in + 4);
  r->seq = get64(in + 8);
  r->offset = get64(in + 16);
  r->length = get64(in + 24);
  r->data_off = get64(in + 32);
  r->calls = get64(in + 40);
  r->time_ns = get64(in + 48);
  r->data_crc = get32(in + 56);
  /* no sum below can wrap: each term is checked against int64_t first */
  if (r->seq != seq || r->length == 0 || data_size < 0 ||
      r->length > (uint64_t)INT64_MAX ||
      r->offset > (uint64_t)INT64_MAX - r->length || r->data_off > (uint64_t)data_size ||
      r->length > (uint64_t)data_size - r->data_off)
    return -1;
  return 0;
}

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

int aggio__stage_rec_older(const struct aggio__stage_rec *a, int rank_a,
                           const struct aggio__stage_rec *b, int rank_b) {
  int c = cmp_u64(a->epoch, b->epoch);
  if (!c)
    c = cmp_u64(a->calls, b->calls);
  if (!c)
    c = cmp_u64(a->time_ns, b->time_ns);
  if (!c)
    c = rank_a < rank_b ? -1 : rank_a > rank_b;
  return c ? c : cmp_u64(a->seq, b->seq);
}

void aggio__stage_drained_encode(const struct aggio__stage_drained *d,
                                 unsigned char out[AGGIO_STAGE_DRAINED]) {
  uint64_t a, b;
  memcpy(&a, &d->started, 8); /* IEEE 754 doubles, stored little-endian */
  memcpy(&b, &d->updated, 8);
  put64(out, d->records);
  put64(out + 8, d->bytes);
  put64(out + 16, a);
  put64(out + 24, b);
}

/* ---- names --------------------------------------------------------------------- */

uint64_t aggio__stage_key(const char *abs_path) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)abs_path; *p; p++)
    h = (h ^ *p) * 0x100000001b3ull;
  return h;
}

int aggio__stage_dir_of(const char *stage_dir, const char *abs_path, char *out,
                        size_t len) {
  const char *base = strrchr(abs_path, '/');
  base = base ? base + 1 : abs_path;
  int n = snprintf(out, len, "%s/%s.%016llx", stage_dir, base,
                   (unsigned long long)aggio__stage_key(abs_path));
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int aggio__stage_writer_path(const char *dir, const char *session, int rank,
                             const char *what, char *out, size_t len) {
  int n = snprintf(out, len, "%s/%s.%d.%s", dir, session, rank, what);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int aggio__stage_index_name(const char *name, char session[17], int *rank) {
  size_t n = strlen(name);
  const char *suffix = ".index";
  if (n < 16 + 1 + 1 + 6 || strcmp(name + n - 6, suffix) != 0 || name[16] != '.')
    return -1;
  for (int i = 0; i < 16; i++)
    if (!strchr("0123456789abcdef", name[i]))
      return -1;
  long r = 0;
  const char *p = name + 17;
  for (; p < name + n - 6; p++) {
    if (*p < '0' || *p > '9' || r > 100000000)
      return -1;
    r = r * 10 + (*p - '0');
  }
  if (p == name + 17)
    return -1;
  memcpy(session, name, 16);
  session[16] = '\0';
  *rank = (int)r;
  return 0;
}

/* ---- the manifest -------------------------------------------------------------- */

int aggio__stage_manifest_text(const char *abs_path, char *out, size_t len) {
  int n = snprintf(out, len,
                   AGGIO_STAGE_HEAD "\n"
                   "final %s\n"
                   "# Bytes staged by aggio for the final file above (docs/staging.md).\n"
                   "# `aggio stage drain DIR` writes them there;\n"
                   "# `aggio stage status DIR` shows what is left.\n",
                   abs_path);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int aggio__stage_manifest_parse(const char *text, char *final, size_t len, char *msg,
                                size_t msglen) {
  size_t head = strlen(AGGIO_STAGE_HEAD);
  if (strncmp(text, AGGIO_STAGE_HEAD, head) != 0 || text[head] != '\n') {
    snprintf(msg, msglen, "not a stage manifest (no \"%s\" line first)",
             AGGIO_STAGE_HEAD);
    return -1;
  }
  for (const char *line = text + head + 1; *line;) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    if (n > 6 && strncmp(line, "final ", 6) == 0 && line[6] == '/') {
      if (n - 6 >= len) {
        snprintf(msg, msglen, "the final file's name is too long");
        return -1;
      }
      memcpy(final, line + 6, n - 6);
      final[n - 6] = '\0';
      return 0;
    }
    line += n + (end ? 1 : 0);
  }
  snprintf(msg, msglen, "no \"final /absolute/path\" line");
  return -1;
}
