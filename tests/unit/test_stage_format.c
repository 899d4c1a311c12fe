/*
 * test_stage_format.c - a stage directory's formats (src/plan/stage_format.h,
 * docs/staging.md): CRC-32 equals zlib's on its check value and on pieces
 * fed in any split; a record decodes back to what encoded it, with and
 * without its data's CRC, and any flipped bit, wrong position, empty
 * length or bytes outside the .data file makes it no record; the names
 * and the manifest round-trip, refusing what format 2 forbids; the
 * replay's order of records (age, then rank, then seq).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "stage_format.h"

static void check_crc(void) {
  CHECK(aggio__crc32(0, "123456789", 9) == 0xCBF43926u, "CRC-32 check value: %08x",
        aggio__crc32(0, "123456789", 9));
  CHECK(aggio__crc32(0, "", 0) == 0, "CRC-32 of nothing");
  unsigned char b[1000];
  for (int i = 0; i < 1000; i++)
    b[i] = (unsigned char)(i * 37 + 11);
  uint32_t whole = aggio__crc32(0, b, sizeof b);
  int bad = 0;
  for (int cut = 0; cut <= 1000; cut += 7) /* pieces: byte tails and 8-byte steps alike */
    bad += aggio__crc32(aggio__crc32(0, b, (size_t)cut), b + cut, (size_t)(1000 - cut)) !=
           whole;
  CHECK(bad == 0, "CRC-32 fed in two pieces differs at %d cuts", bad);
}

static void check_records(void) {
  for (int with = 0; with < 2; with++) {
    struct aggio__stage_rec r = {.epoch = 7, .seq = 3, .offset = (uint64_t)1 << 40,
                                 .length = 47008, .data_off = 4096, .calls = 5,
                                 .time_ns = 1700000000123456789ull,
                                 .data_crc = 0xdeadbeef, .has_data_crc = with}, d;
    unsigned char b[AGGIO_STAGE_REC];
    aggio__stage_rec_encode(&r, b);
    CHECK(aggio__stage_rec_decode(b, 3, 4096 + 47008, &d) == 0, "a record decodes");
    CHECK(d.epoch == 7 && d.seq == 3 && d.offset == r.offset && d.length == 47008 &&
              d.data_off == 4096 && d.calls == 5 && d.time_ns == r.time_ns &&
              d.has_data_crc == with &&
              d.data_crc == (with ? 0xdeadbeef : 0),
          "fields back (with data CRC %d)", with);
    CHECK(b[0] == 'A' && b[1] == 'G' && b[2] == 'S' && b[3] == (with ? 'I' : 'R'),
          "the magic's bytes");
    CHECK(aggio__stage_rec_decode(b, 4, 1 << 20, &d) != 0, "another position");
    CHECK(aggio__stage_rec_decode(b, 3, 4096 + 47007, &d) != 0, "bytes past the .data end");
    int flips = 0;
    for (int bit = 0; bit < AGGIO_STAGE_REC * 8; bit++) {
      b[bit / 8] ^= (unsigned char)(1 << (bit % 8));
      flips += aggio__stage_rec_decode(b, 3, 1 << 30, &d) == 0;
      b[bit / 8] ^= (unsigned char)(1 << (bit % 8));
    }
    CHECK(flips == 0, "%d single-bit flips still decode", flips);
  }
  struct aggio__stage_rec z = {.has_data_crc = 1}, d;
  unsigned char b[AGGIO_STAGE_REC] = {0};
  CHECK(aggio__stage_rec_decode(b, 0, 100, &d) != 0, "a hole of zeros is no record");
  aggio__stage_rec_encode(&z, b);
  CHECK(aggio__stage_rec_decode(b, 0, 100, &d) != 0, "an empty write is no record");
  struct aggio__stage_rec w = {.offset = UINT64_MAX - 10, .length = 100};
  aggio__stage_rec_encode(&w, b);
  CHECK(aggio__stage_rec_decode(b, 0, 1000, &d) != 0, "an offset past 2^63 is no record");
}

/* The replay's order: epoch, then collective calls, then time, then rank,
 * then seq; a writer's own records keep their seq order. */
static void check_order(void) {
  struct aggio__stage_rec a = {.epoch = 1, .calls = 3, .time_ns = 100, .seq = 9};
  struct aggio__stage_rec b = {.epoch = 1, .calls = 2, .time_ns = 200, .seq = 0};
  CHECK(aggio__stage_rec_older(&b, 1, &a, 0) < 0, "fewer collective calls is older, "
        "whatever the clocks say");
  b.calls = 3;
  CHECK(aggio__stage_rec_older(&a, 0, &b, 1) < 0, "same calls: the earlier time is older");
  b.time_ns = 100;
  CHECK(aggio__stage_rec_older(&a, 0, &b, 1) < 0 && aggio__stage_rec_older(&b, 1, &a, 0) > 0,
        "same time: the lower rank first");
  b.epoch = 0;
  CHECK(aggio__stage_rec_older(&b, 1, &a, 0) < 0, "an earlier epoch is older");
  struct aggio__stage_rec c = a;
  c.seq = 10;
  CHECK(aggio__stage_rec_older(&a, 0, &c, 0) < 0, "one writer's records in seq order");
  CHECK(aggio__stage_rec_older(&a, 0, &a, 0) == 0, "a record is not older than itself");
}

static void check_names(void) {
  char out[512], session[17];
  int rank = -1;
  CHECK(aggio__stage_key("") == 0xcbf29ce484222325ull, "FNV-1a of nothing");
  CHECK(aggio__stage_key("a") == 0xaf63dc4c8601ec8cull, "FNV-1a of \"a\"");
  CHECK(aggio__stage_dir_of("/dev/shm/s", "/lus/run/ckpt.h5", out, sizeof out) == 0 &&
            strncmp(out, "/dev/shm/s/ckpt.h5.", 19) == 0 && strlen(out) == 19 + 16,
        "stage dir: %s", out);
  CHECK(aggio__stage_dir_of("/s", "/x", out, 8) != 0, "a name that does not fit");
  CHECK(aggio__stage_writer_path("/d", "0123456789abcdef", 12, "index", out, sizeof out) == 0 &&
            strcmp(out, "/d/0123456789abcdef.12.index") == 0,
        "writer path: %s", out);
  CHECK(aggio__stage_index_name("0123456789abcdef.12.index", session, &rank) == 0 &&
            rank == 12 && strcmp(session, "0123456789abcdef") == 0,
        "index name parsed");
  const char *bad[] = {"0123456789abcdef.12.data", "0123456789ABCDEF.1.index",
                       "0123456789abcde.1.index", "0123456789abcdef..index",
                       "0123456789abcdef.1x.index", "manifest", "lock"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(aggio__stage_index_name(bad[i], session, &rank) != 0, "not an index: %s", bad[i]);
}

static void check_manifest(void) {
  char text[1024], final[256], msg[128];
  CHECK(aggio__stage_manifest_text("/lus/a b/ckpt", text, sizeof text) == 0, "manifest text");
  CHECK(aggio__stage_manifest_parse(text, final, sizeof final, msg, sizeof msg) == 0 &&
            strcmp(final, "/lus/a b/ckpt") == 0,
        "manifest back: %s", final);
  CHECK(aggio__stage_manifest_parse("aggio stage 1\nfinal /x\n", final, sizeof final, msg,
                                    sizeof msg) != 0, "another format (1: 48-byte records)");
  CHECK(aggio__stage_manifest_parse("aggio stage 2\nfinal x\n", final, sizeof final, msg,
                                    sizeof msg) != 0, "a relative final name");
  CHECK(aggio__stage_manifest_parse("aggio stage 2\n# only words\n", final, sizeof final, msg,
                                    sizeof msg) != 0, "no final line");
  CHECK(aggio__stage_manifest_text("/x", text, 10) != 0, "a manifest that does not fit");
}

int main(void) {
  check_crc();
  check_records();
  check_order();
  check_names();
  check_manifest();
  return test_summary();
}
