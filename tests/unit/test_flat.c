/*
 * test_flat.c - unit tests of the MPI-free flat operations: coalescing,
 * prefix sums, mapping stream ranges across tiles, contiguity/monotonicity,
 * pack/unpack round trips.  The map tests compare against a byte-by-byte
 * reference expansion of the tiled typemap.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aggio_errno.h"
#include "extent.h"
#include "flat.h"
#include "harness.h"

#define NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

/* Byte offset (relative to base 0) of data-stream byte p, the slow way. */
static int64_t ref_offset(const struct aggio__flat *f, int64_t p) {
  int64_t tile = p / f->size, r = p % f->size;
  for (int64_t i = 0; i < f->n; i++) {
    if (r < f->len[i])
      return tile * f->extent + f->off[i] + r;
    r -= f->len[i];
  }
  return -1;
}

/* Checks map(base, pos, nbytes) byte by byte against ref_offset and that
 * consecutive output ranges never touch (they must have been merged). */
static void check_map(const struct aggio__flat *f, int64_t base, int64_t pos,
                      int64_t nbytes) {
  struct aggio__extents out = {0};
  int rc = aggio__flat_map(f, base, pos, nbytes, &out);
  CHECK(rc == 0, "map rc %d", rc);
  CHECK(aggio__extents_bytes(&out) == nbytes, "map bytes %lld != %lld",
        (long long)aggio__extents_bytes(&out), (long long)nbytes);
  int64_t p = pos, bad = 0;
  for (size_t k = 0; k < out.n; k++) {
    if (k > 0 && out.v[k - 1].off + out.v[k - 1].len == out.v[k].off)
      bad++;
    for (int64_t b = 0; b < out.v[k].len; b++, p++)
      if (out.v[k].off + b != base + ref_offset(f, p))
        bad++;
  }
  CHECK(bad == 0, "map pos %lld n %lld: %lld mismatches", (long long)pos,
        (long long)nbytes, (long long)bad);
  aggio__extents_free(&out);
}

static void test_coalesce_and_prefix(void) {
  /* [0,4) [4,8) touch -> one; zero-length dropped even between touching
   * pieces; [20,2) then [16,4) touch only out of order -> kept apart */
  int64_t off[] = {0, 4, 8, 8, 20, 16, 22};
  int64_t len[] = {4, 4, 0, 2, 2, 4, 1};
  struct aggio__flat *f = aggio__flat_new(off, len, NELEM(off), 0, 32);
  CHECK(f != NULL, "alloc");
  CHECK(f->n == 4, "n = %lld", (long long)f->n);
  CHECK(f->off[0] == 0 && f->len[0] == 10, "piece 0 %lld+%lld",
        (long long)f->off[0], (long long)f->len[0]);
  CHECK(f->off[1] == 20 && f->len[1] == 2, "piece 1");
  CHECK(f->off[2] == 16 && f->len[2] == 4, "piece 2");
  CHECK(f->off[3] == 22 && f->len[3] == 1, "piece 3: follows [16,20), apart");
  CHECK(f->size == 17, "size %lld", (long long)f->size);
  CHECK(f->prefix[0] == 0 && f->prefix[1] == 10 && f->prefix[2] == 12 &&
            f->prefix[3] == 16 && f->prefix[4] == 17,
        "prefix %lld %lld %lld %lld", (long long)f->prefix[1],
        (long long)f->prefix[2], (long long)f->prefix[3], (long long)f->prefix[4]);
  CHECK(f->refs == 1, "refs %d", f->refs);
  aggio__flat_free(f);
}

static void test_empty(void) {
  int64_t off[] = {5}, len[] = {0};
  struct aggio__flat *f = aggio__flat_new(off, len, 1, 0, 8);
  CHECK(f && f->n == 0 && f->size == 0 && f->prefix[0] == 0, "empty flat");
  CHECK(aggio__flat_is_contiguous(f, 3), "empty is contiguous");
  CHECK(aggio__flat_is_monotonic(f), "empty is monotonic");
  struct aggio__extents out = {0};
  CHECK(aggio__flat_map(f, 0, 0, 0, &out) == 0 && out.n == 0, "map 0 bytes");
  CHECK(aggio__flat_map(f, 0, 0, 1, &out) == AGGIO_ERR_ARG, "map of no data");
  aggio__flat_free(f);
  f = aggio__flat_new(NULL, NULL, 0, 0, 0);
  CHECK(f && f->n == 0, "flat from no pieces");
  aggio__flat_free(f);
}

static void test_map_tiles(void) {
  /* a vector-like type: 3 pieces of 4 bytes every 10, extent 30 */
  int64_t off[] = {0, 10, 20}, len[] = {4, 4, 4};
  struct aggio__flat *f = aggio__flat_new(off, len, 3, 0, 30);
  CHECK(f && f->n == 3 && f->size == 12, "vector flat");
  check_map(f, 0, 0, 12);
  check_map(f, 100, 0, 12);
  check_map(f, 0, 2, 3);   /* inside one piece */
  check_map(f, 0, 2, 7);   /* mid-piece to mid-piece */
  check_map(f, 0, 10, 30); /* across several tile boundaries */
  check_map(f, 7, 121, 1); /* far tile, one byte */
  check_map(f, 0, 4, 8);   /* exactly piece-aligned */
  /* the first range of a map starting mid-piece */
  struct aggio__extents out = {0};
  aggio__flat_map(f, 1000, 13 + 12, 2, &out);
  CHECK(out.n == 1 && out.v[0].off == 1000 + 60 + 1 && out.v[0].len == 2,
        "mid-piece start %lld+%lld", (long long)out.v[0].off,
        (long long)out.v[0].len);
  aggio__extents_free(&out);
  aggio__flat_free(f);
}

static void test_map_coalesces_across_tiles(void) {
  /* one piece filling its extent: a whole stream range is one output range */
  int64_t off[] = {8}, len[] = {16};
  struct aggio__flat *f = aggio__flat_new(off, len, 1, 8, 16);
  struct aggio__extents out = {0};
  CHECK(aggio__flat_map(f, 0, 5, 1000, &out) == 0, "map");
  CHECK(out.n == 1 && out.v[0].off == 13 && out.v[0].len == 1000,
        "one range %zu %lld+%lld", out.n, (long long)out.v[0].off,
        (long long)out.v[0].len);
  aggio__extents_free(&out);
  /* and a pattern whose last piece ends where the next tile's first begins */
  int64_t off2[] = {4, 0}, len2[] = {4, 2};
  struct aggio__flat *g = aggio__flat_new(off2, len2, 2, 0, 4);
  check_map(g, 0, 0, 30);
  check_map(g, 0, 3, 9);
  aggio__flat_free(g);
  aggio__flat_free(f);
}

static void test_map_many_pieces(void) {
  /* a million pieces: one binary search then linear; also checks the search
   * by mapping single bytes at scattered positions */
  int64_t n = 1000000;
  int64_t *off = malloc(n * sizeof *off), *len = malloc(n * sizeof *len);
  for (int64_t i = 0; i < n; i++) {
    off[i] = 3 * i;
    len[i] = 1 + (i & 1);
  }
  struct aggio__flat *f = aggio__flat_new(off, len, n, 0, 3 * n);
  CHECK(f && f->n == n && f->size == n + n / 2, "big flat");
  int bad = 0;
  for (int64_t p = 0; p < 3 * f->size; p += 99991) {
    struct aggio__extents out = {0};
    aggio__flat_map(f, 0, p, 1, &out);
    if (out.n != 1 || out.v[0].off != ref_offset(f, p))
      bad++;
    aggio__extents_free(&out);
  }
  CHECK(bad == 0, "%d single-byte maps wrong", bad);
  struct aggio__extents out = {0};
  CHECK(aggio__flat_map(f, 0, 1, 2 * f->size, &out) == 0, "long map");
  CHECK(out.n == (size_t)(2 * n), "long map ranges %zu", out.n);
  aggio__extents_free(&out);
  aggio__flat_free(f);
  free(off);
  free(len);
}

/* A type whose one piece fills its extent (a byte view, or one with its
 * data shifted by a lower bound) maps any range to one extent at once,
 * the same bytes as tile by tile; appended to a touching extent it merges. */
static void test_map_gapless(void) {
  int64_t off1[] = {0}, len1[] = {1};
  struct aggio__flat *byte = aggio__flat_new(off1, len1, 1, 0, 1);
  check_map(byte, 4096, 7, 47008);
  struct aggio__extents out = {0};
  CHECK(aggio__flat_map(byte, 4096, 7, 47008, &out) == 0 && out.n == 1 &&
            out.v[0].off == 4096 + 7 && out.v[0].len == 47008,
        "a byte view: one extent");
  CHECK(aggio__flat_map(byte, 4096, 7 + 47008, 10, &out) == 0 && out.n == 1 &&
            out.v[0].len == 47018,
        "the next range merges with it");
  aggio__extents_free(&out);
  int64_t off2[] = {-8}, len2[] = {24};
  struct aggio__flat *shifted = aggio__flat_new(off2, len2, 1, -8, 24);
  check_map(shifted, 100, 0, 1000);
  check_map(shifted, 100, 23, 2);
  aggio__flat_free(byte);
  aggio__flat_free(shifted);
}

static void test_contiguous(void) {
  int64_t off[] = {0, 4}, len[] = {4, 4};
  struct aggio__flat *f = aggio__flat_new(off, len, 2, 0, 8);
  CHECK(f->n == 1, "coalesced");
  CHECK(aggio__flat_is_contiguous(f, 1), "count 1");
  CHECK(aggio__flat_is_contiguous(f, 5), "tiles touch");
  aggio__flat_free(f);

  int64_t off2[] = {0}, len2[] = {4};
  f = aggio__flat_new(off2, len2, 1, 0, 8); /* resized: gap after */
  CHECK(aggio__flat_is_contiguous(f, 1), "single instance");
  CHECK(!aggio__flat_is_contiguous(f, 2), "gap between tiles");
  CHECK(aggio__flat_is_contiguous(f, 0), "count 0");
  aggio__flat_free(f);

  int64_t off3[] = {8, 0}, len3[] = {8, 8}; /* covers [0,16) out of order */
  f = aggio__flat_new(off3, len3, 2, 0, 16);
  CHECK(!aggio__flat_is_contiguous(f, 1), "out of order is not contiguous");
  aggio__flat_free(f);
}

static void test_monotonic(void) {
  int64_t off[] = {0, 8, 16}, len[] = {4, 4, 4};
  struct aggio__flat *f = aggio__flat_new(off, len, 3, 0, 24);
  CHECK(aggio__flat_is_monotonic(f), "increasing");
  aggio__flat_free(f);
  f = aggio__flat_new(off, len, 3, 0, 8); /* next tile starts at 8 < 16 */
  CHECK(!aggio__flat_is_monotonic(f), "tiles go backwards");
  aggio__flat_free(f);
  int64_t off2[] = {8, 0}, len2[] = {4, 4};
  f = aggio__flat_new(off2, len2, 2, 0, 16);
  CHECK(!aggio__flat_is_monotonic(f), "decreasing within a tile");
  aggio__flat_free(f);
}

static void test_disjoint(void) {
  int64_t off[] = {0, 8, 16}, len[] = {4, 8, 4};
  struct aggio__flat *f = aggio__flat_new(off, len, 3, 0, 20);
  CHECK(aggio__flat_is_disjoint(f), "pieces end before the next starts");
  aggio__flat_free(f);
  f = aggio__flat_new(off, len, 3, 0, 19); /* the next tile starts at 19 < 20 */
  CHECK(aggio__flat_is_monotonic(f) && !aggio__flat_is_disjoint(f), "tiles overlap");
  aggio__flat_free(f);
  int64_t off2[] = {0, 4}, len2[] = {8, 8}; /* [0,8) and [4,12) */
  f = aggio__flat_new(off2, len2, 2, 0, 12);
  CHECK(aggio__flat_is_monotonic(f) && !aggio__flat_is_disjoint(f), "blocks overlap");
  aggio__flat_free(f);
  int64_t off3[] = {4, 0}, len3[] = {4, 4};
  f = aggio__flat_new(off3, len3, 2, 0, 8);
  CHECK(!aggio__flat_is_disjoint(f), "going back is not disjoint either");
  aggio__flat_free(f);
  f = aggio__flat_new(off3, len3, 0, 0, 0);
  CHECK(aggio__flat_is_disjoint(f), "an empty type is disjoint");
  aggio__flat_free(f);
}

/* A filetype valid for one instance: data past its extent (HDF5's resized
 * types).  Its pieces are in order, its tiles are not. */
static void test_instance_vs_tiles(void) {
  int64_t off[] = {0, 40}, len[] = {16, 16};
  struct aggio__flat *f = aggio__flat_new(off, len, 2, 0, 8);
  CHECK(aggio__flat_pieces_ordered(f, 0) && aggio__flat_pieces_ordered(f, 1),
        "one instance: ordered and disjoint");
  CHECK(!aggio__flat_tiles_ordered(f, 0) && !aggio__flat_tiles_ordered(f, 1),
        "tiles go back (the next starts at 8, before 40)");
  CHECK(!aggio__flat_is_monotonic(f) && !aggio__flat_is_disjoint(f), "tiled: neither");
  aggio__flat_free(f);
  /* data past the extent, but the next tile starts after the last piece's
   * start: ordered, yet overlapping */
  int64_t off2[] = {0}, len2[] = {8};
  f = aggio__flat_new(off2, len2, 1, 0, 4);
  CHECK(aggio__flat_tiles_ordered(f, 0) && !aggio__flat_tiles_ordered(f, 1),
        "8 bytes every 4: tiles ordered, not disjoint");
  aggio__flat_free(f);
  /* data below the lower bound (lb 16, data at 0 and 32, extent 48) */
  int64_t off3[] = {0, 32}, len3[] = {16, 16};
  f = aggio__flat_new(off3, len3, 2, 16, 48);
  CHECK(aggio__flat_pieces_ordered(f, 1) && aggio__flat_tiles_ordered(f, 1),
        "the next tile starts at 48, where the last piece ends");
  aggio__flat_free(f);
  /* pieces out of order fail within one instance already */
  int64_t off4[] = {8, 0}, len4[] = {4, 4};
  f = aggio__flat_new(off4, len4, 2, 0, 16);
  CHECK(!aggio__flat_pieces_ordered(f, 0) && !aggio__flat_pieces_ordered(f, 1), "decreasing");
  aggio__flat_free(f);
  /* an empty type is in order both ways */
  f = aggio__flat_new(off4, len4, 0, 0, 0);
  CHECK(aggio__flat_pieces_ordered(f, 1) && aggio__flat_tiles_ordered(f, 1), "empty");
  aggio__flat_free(f);
}

static void test_negative_offsets(void) {
  /* lb < 0: pieces before the origin, e.g. a resized type with lb -8 */
  int64_t off[] = {-8, 0, 4}, len[] = {4, 2, 2};
  struct aggio__flat *f = aggio__flat_new(off, len, 3, -8, 16);
  CHECK(f->n == 3 && f->off[0] == -8 && f->off[1] == 0 && f->off[2] == 4,
        "n %lld", (long long)f->n);
  check_map(f, 100, 0, 40);
  check_map(f, 0, 3, 5);
  CHECK(aggio__flat_is_monotonic(f), "monotonic with negative start");

  /* round trip through a buffer whose origin is 8 bytes in */
  int64_t count = 3;
  char mem[64], back[64], stream[64];
  for (int i = 0; i < 64; i++)
    mem[i] = (char)(i + 1);
  memset(back, 0, sizeof back);
  aggio__flat_pack(f, count, mem + 8, stream);
  int bad = 0;
  for (int64_t p = 0; p < count * f->size; p++)
    if (stream[p] != mem[8 + ref_offset(f, p)])
      bad++;
  CHECK(bad == 0, "pack with negative offsets: %d wrong", bad);
  aggio__flat_unpack(f, count, stream, count * f->size, back + 8);
  bad = 0;
  for (int64_t p = 0; p < count * f->size; p++)
    if (back[8 + ref_offset(f, p)] != mem[8 + ref_offset(f, p)])
      bad++;
  CHECK(bad == 0, "unpack with negative offsets: %d wrong", bad);
  aggio__flat_free(f);
}

static void test_pack_roundtrip(void) {
  int64_t off[] = {2, 10, 5}, len[] = {3, 1, 2};
  struct aggio__flat *f = aggio__flat_new(off, len, 3, 0, 12);
  int64_t count = 4;
  char mem[48], back[48], stream[24];
  for (int i = 0; i < 48; i++)
    mem[i] = (char)(100 + i);
  memset(back, 0, sizeof back);
  aggio__flat_pack(f, count, mem, stream);
  int bad = 0;
  for (int64_t p = 0; p < count * f->size; p++)
    if (stream[p] != mem[ref_offset(f, p)])
      bad++;
  CHECK(bad == 0, "pack: %d wrong", bad);
  aggio__flat_unpack(f, count, stream, count * f->size, back);
  bad = 0;
  for (int i = 0; i < 48; i++) {
    int in_type = 0;
    for (int64_t p = 0; p < count * f->size; p++)
      if (ref_offset(f, p) == i)
        in_type = 1;
    if (back[i] != (in_type ? mem[i] : 0))
      bad++;
  }
  CHECK(bad == 0, "unpack: %d wrong (gaps must stay untouched)", bad);

  /* contiguous fast path */
  int64_t off2[] = {0}, len2[] = {8};
  struct aggio__flat *g = aggio__flat_new(off2, len2, 1, 0, 8);
  aggio__flat_pack(g, 3, mem, stream);
  CHECK(memcmp(stream, mem, 24) == 0, "contiguous pack");
  aggio__flat_free(g);
  aggio__flat_free(f);
}

static void test_short_unpack(void) {
  int64_t off[] = {0, 6}, len[] = {2, 2};
  struct aggio__flat *f = aggio__flat_new(off, len, 2, 0, 8);
  char stream[12] = "abcdefghijkl", buf[24];
  memset(buf, '.', sizeof buf);
  aggio__flat_unpack(f, 3, stream, 5, buf); /* tile 0 whole, tile 1 one byte */
  CHECK(memcmp(buf, "ab....cde.......", 16) == 0, "short unpack: %.16s", buf);
  CHECK(buf[16] == '.' && buf[23] == '.', "tile 2 untouched");
  memset(buf, '.', sizeof buf);
  aggio__flat_unpack(f, 3, stream, 0, buf);
  CHECK(buf[0] == '.', "zero-byte unpack moves nothing");
  memset(buf, '.', sizeof buf);
  aggio__flat_unpack(f, 1, stream, 100, buf); /* more than count*size */
  CHECK(memcmp(buf, "ab....cd........", 16) == 0, "capped: %.16s", buf);
  aggio__flat_free(f);
}

/* Ranges whose end passes INT64_MAX are refused with AGGIO_ERR_OVERFLOW
 * before any arithmetic overflows (UBSan fails the sanitizer build on it);
 * ranges that end exactly at INT64_MAX are fine, and merge. */
static void test_extents_near_int64_max(void) {
  struct aggio__extents l = {0};
  CHECK(aggio__extents_push(&l, INT64_MAX - 2, 4) == AGGIO_ERR_OVERFLOW,
        "[INT64_MAX-2, +4) passes INT64_MAX");
  CHECK(l.n == 0, "a refused range is not stored (n %zu)", l.n);
  CHECK(aggio__extents_push(&l, INT64_MAX - 10, 5) == 0, "[max-10, +5)");
  CHECK(aggio__extents_push(&l, INT64_MAX - 5, 5) == 0, "[max-5, +5) ends at max");
  CHECK(l.n == 1 && l.v[0].off == INT64_MAX - 10 && l.v[0].len == 10,
        "touching ranges at the top merge: n %zu len %lld", l.n,
        (long long)(l.n ? l.v[0].len : 0));
  CHECK(aggio__extents_push(&l, INT64_MAX, 1) == AGGIO_ERR_OVERFLOW, "[max, +1)");
  aggio__extents_clear(&l);
  CHECK(aggio__extents_push(&l, INT64_MIN, 8) == 0 && aggio__extents_push(&l, 100, 1) == 0,
        "a range far below the last one");
  CHECK(aggio__extents_push(&l, INT64_MAX - 1, 1) == 0 && l.n == 3,
        "far above: no merge, no overflow computing the gap (n %zu)", l.n);
  aggio__extents_free(&l);
}

/* Mapping a view whose tiles would pass INT64_MAX is an error, not a wrap. */
static void test_map_near_int64_max(void) {
  int64_t off[] = {0}, len[] = {4};
  struct aggio__flat *f = aggio__flat_new(off, len, 1, 0, 8);
  struct aggio__extents out = {0};
  CHECK(aggio__flat_map(f, INT64_MAX - 6, 0, 4, &out) == 0 && out.n == 1 &&
            out.v[0].off == INT64_MAX - 6,
        "the first tile fits below INT64_MAX");
  aggio__extents_clear(&out);
  CHECK(aggio__flat_map(f, INT64_MAX - 6, 8, 4, &out) == AGGIO_ERR_OVERFLOW,
        "tile 2 starts past INT64_MAX");
  aggio__extents_clear(&out);
  CHECK(aggio__flat_map(f, 0, INT64_MAX - 3, 4, &out) == AGGIO_ERR_OVERFLOW,
        "stream position near INT64_MAX: tile * extent overflows");
  aggio__extents_free(&out);
  aggio__flat_free(f);
}

int main(void) {
  test_extents_near_int64_max();
  test_map_near_int64_max();
  test_coalesce_and_prefix();
  test_empty();
  test_map_tiles();
  test_map_coalesces_across_tiles();
  test_map_many_pieces();
  test_map_gapless();
  test_contiguous();
  test_monotonic();
  test_disjoint();
  test_instance_vs_tiles();
  test_negative_offsets();
  test_pack_roundtrip();
  test_short_unpack();
  return test_summary();
}
