/*
 * subfile_map.h - where a subfiled file's logical bytes lie (docs/subfiling.md):
 * stripes of S bytes dealt round-robin over M subfiles, and the layout file
 * that describes them.  Pure arithmetic and text: no MPI, no file.
 */
#ifndef AGGIO_SUBFILE_MAP_H
#define AGGIO_SUBFILE_MAP_H

#include <stddef.h>
#include <stdint.h>

#define AGGIO_SUBFILE_MAGIC "aggio subfiled file, format "
#define AGGIO_SUBFILE_FORMAT 1
#define AGGIO_SUBFILE_MAX 65536 /* subfiles a layout may name */
#define AGGIO_SUBFILE_STRIPE (1 << 20) /* the default stripe (docs/subfiling.md) */
/* The largest stripe a layout may give: with at most AGGIO_SUBFILE_MAX
 * subfiles, logical offsets of subfiles up to 2^47 bytes stay within
 * int64_t (a layout file is outside input: no overflow from its numbers). */
#define AGGIO_SUBFILE_STRIPE_MAX ((int64_t)1 << 40)

struct aggio__subfile_map {
  int64_t stripe; /* S, bytes, >= 1 */
  int count;      /* M, >= 1 */
};

/* The piece of [off, off + len) that starts at off and stays in one stripe:
 * its subfile, its offset there, and its length (<= len). */
void aggio__subfile_piece(const struct aggio__subfile_map *m, int64_t off, int64_t len, int *k,
                          int64_t *sub_off, int64_t *n);
/* The bytes of logical [0, size) that subfile k holds: its size when the
 * logical file is `size` bytes long. */
int64_t aggio__subfile_share(const struct aggio__subfile_map *m, int k, int64_t size);
/* One past the last logical byte of subfile k when it is sub_size bytes
 * long (0 when empty); the logical size is the largest over k. */
int64_t aggio__subfile_logical_end(const struct aggio__subfile_map *m, int k, int64_t sub_size);

/* The name of subfile k beside a layout named `base` (a file name, no
 * directory): "base.subfile.K.of.M".  0, or -1 when out does not hold it. */
int aggio__subfile_name(const char *base, int k, int count, char *out, size_t outlen);

/* The layout file's text for m and `base`, in a malloc'd string (NULL: out
 * of memory). */
char *aggio__subfile_layout_text(const struct aggio__subfile_map *m, const char *base);

/* Whether text (the first bytes of a file, NUL-terminated) begins like a
 * layout: the magic line, whatever its version. */
int aggio__subfile_is_layout(const char *text);

/* Parses a layout; the subfile names (file names, no '/') are stored in
 * *names, one malloc'd array of m->count malloc'd strings (free with
 * aggio__subfile_names_free).  0, or -1 with a message in err. */
int aggio__subfile_layout_parse(const char *text, struct aggio__subfile_map *m, char ***names,
                                char *err, size_t errlen);
void aggio__subfile_names_free(char **names, int count);

#endif
