/*
 * test_subfile_map.c - a subfiled file's arithmetic and layout text
 * (src/plan/subfile_map.h) against a byte-by-byte reference: every logical
 * byte lies in exactly one subfile at one offset, the shares of a logical
 * size are the subfiles' sizes and give that size back, and the layout
 * text parses back to what wrote it, refusing what format 1 forbids.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "subfile_map.h"

/* Byte b's subfile and offset, one stripe at a time from the start. */
static void reference(const struct aggio__subfile_map *m, int64_t b, int *k, int64_t *off) {
  int64_t stripe = b / m->stripe;
  *k = (int)(stripe % m->count);
  *off = (stripe / m->count) * m->stripe + b % m->stripe;
}

static void check_pieces(const struct aggio__subfile_map *m, int64_t off, int64_t len) {
  int64_t b = off, bad = 0;
  while (b < off + len) {
    int k, rk;
    int64_t so, n, ro;
    aggio__subfile_piece(m, b, off + len - b, &k, &so, &n);
    for (int64_t i = 0; i < n; i++) {
      reference(m, b + i, &rk, &ro);
      bad += rk != k || ro != so + i;
    }
    bad += n <= 0;
    b += n > 0 ? n : 1;
  }
  CHECK(bad == 0, "S %lld M %d [%lld, +%lld): %lld bytes misplaced", (long long)m->stripe,
        m->count, (long long)off, (long long)len, (long long)bad);
}

/* Subfile k's size for a logical size, counted byte by byte. */
static int64_t reference_share(const struct aggio__subfile_map *m, int k, int64_t size) {
  int64_t end = 0;
  for (int64_t b = 0; b < size; b++) {
    int rk;
    int64_t ro;
    reference(m, b, &rk, &ro);
    if (rk == k && ro + 1 > end)
      end = ro + 1;
  }
  return end;
}

static void check_sizes(const struct aggio__subfile_map *m, int64_t size) {
  int64_t total = 0, logical = 0;
  int bad = 0;
  for (int k = 0; k < m->count; k++) {
    int64_t share = aggio__subfile_share(m, k, size);
    bad += share != reference_share(m, k, size);
    total += share;
    int64_t end = aggio__subfile_logical_end(m, k, share);
    logical = end > logical ? end : logical;
  }
  CHECK(bad == 0 && total == size && logical == size,
        "S %lld M %d size %lld: %d shares wrong, total %lld, size back %lld",
        (long long)m->stripe, m->count, (long long)size, bad, (long long)total,
        (long long)logical);
}

static void check_text(void) {
  struct aggio__subfile_map m = {1048576, 3}, back = {0, 0};
  char *t = aggio__subfile_layout_text(&m, "ckpt.h5"), **names = NULL, err[256] = "";
  CHECK(t && aggio__subfile_is_layout(t), "layout text");
  if (!t)
    return;
  CHECK(strncmp(t, "aggio subfiled file, format 1\n", 30) == 0, "first line: %.40s", t);
  CHECK(strstr(t, "\nstripe_size 1048576\nsubfiles 3\nsubfile 0 ckpt.h5.subfile.0.of.3\n"
                       "subfile 1 ckpt.h5.subfile.1.of.3\nsubfile 2 ckpt.h5.subfile.2.of.3\nend\n"),
        "layout lines: %s", t);
  int rc = aggio__subfile_layout_parse(t, &back, &names, err, sizeof err);
  CHECK(rc == 0 && back.stripe == m.stripe && back.count == m.count && names &&
            strcmp(names[2], "ckpt.h5.subfile.2.of.3") == 0,
        "parse back: %s", err);
  aggio__subfile_names_free(names, back.count);
  /* what format 1 refuses, each with a message */
  const char *head = "aggio subfiled file, format 1\na\nb\nc\n";
  const char *bads[] = {
      "aggio subfiled file, format 2\na\nb\nc\nstripe_size 4096\nsubfiles 1\nsubfile 0 x\nend\n",
      "stripe_size 0\nsubfiles 1\nsubfile 0 x\nend\n",
      "stripe_size 4096\nsubfiles 0\nend\n",
      "stripe_size 4096\nsubfiles 2\nsubfile 0 x\nend\n",
      "stripe_size 4096\nsubfiles 1\nsubfile 1 x\nend\n",
      "stripe_size 4096\nsubfiles 1\nsubfile 0 ../x\nend\n",
      "stripe_size 4096\nsubfiles 1\nsubfile 0 x\ncolour blue\nend\n",
      "stripe_size 4096\nsubfiles 1\nsubfile 0 x\n",
      "stripe_size 12x\nsubfiles 1\nsubfile 0 x\nend\n",
  };
  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s", i == 0 ? "" : head, bads[i]);
    err[0] = '\0';
    rc = aggio__subfile_layout_parse(text, &back, &names, err, sizeof err);
    CHECK(rc == -1 && names == NULL && err[0], "bad layout %zu accepted (%s)", i, err);
  }
  CHECK(!aggio__subfile_is_layout("\x89HDF\r\n"), "an HDF5 file taken for a layout");
  free(t);
}

int main(void) {
  const int64_t stripes[] = {1, 3, 4096, 65536};
  const int counts[] = {1, 2, 3, 7};
  for (size_t s = 0; s < 4; s++)
    for (size_t c = 0; c < 4; c++) {
      struct aggio__subfile_map m = {stripes[s], counts[c]};
      int64_t row = m.stripe * m.count;
      const int64_t offs[] = {0, 1, m.stripe - 1, m.stripe, row - 1, row, 3 * row + 5};
      for (size_t o = 0; o < 7; o++)
        check_pieces(&m, offs[o], 2 * row + 3);
      const int64_t sizes[] = {0, 1, m.stripe, m.stripe + 1, row - 1, row, row + 1, 5 * row + 7};
      for (size_t z = 0; z < 8; z++)
        if (sizes[z] <= 200000)
          check_sizes(&m, sizes[z]);
    }
  /* a subfile shorter than its share (a hole at the end of it): the size
   * comes from the others */
  struct aggio__subfile_map m = {4096, 3};
  CHECK(aggio__subfile_logical_end(&m, 0, 4096) == 4096 &&
            aggio__subfile_logical_end(&m, 2, 1) == 2 * 4096 + 1 &&
            aggio__subfile_logical_end(&m, 1, 4097) == (3 + 1) * 4096 + 1,
        "logical ends");
  check_text();
  return test_summary();
}
