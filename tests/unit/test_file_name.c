/*
 * test_file_name.c - ROMIO's file-system prefixes (src/plan/file_name.h):
 * a known prefix goes, anything else stays, the name after it is kept
 * whole (colons included).
 */
#include <string.h>

#include "file_name.h"
#include "harness.h"

static void same(const char *in, const char *want) {
  const char *got = aggio__file_name_unprefixed(in);
  CHECK(got && strcmp(got, want) == 0, "\"%s\" -> \"%s\", want \"%s\"", in, got ? got : "(null)",
        want);
}

int main(void) {
  same("ufs:/scratch/a.nc", "/scratch/a.nc");
  same("nfs:/home/u/out", "/home/u/out");
  same("lustre:/lus/run/ckpt.h5", "/lus/run/ckpt.h5");
  same("gpfs:rel/path", "rel/path");
  same("pvfs2:/p", "/p");
  same("ufs:a:b", "a:b");          /* only the first prefix goes */
  same("/scratch/a:b", "/scratch/a:b"); /* a colon later in a path */
  same("run:7.dat", "run:7.dat");  /* an unknown word is part of the name */
  same("UFS:/x", "UFS:/x");        /* ROMIO's prefixes are lower case */
  same("ftp:/x", "ftp:/x");        /* not a path a POSIX call reaches */
  same("plain", "plain");
  same("", "");
  CHECK(aggio__file_name_unprefixed(NULL) == NULL, "NULL stays NULL");
  return test_summary();
}
