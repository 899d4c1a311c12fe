/*
 * fuzz_topology_file.c - libFuzzer target for the topology description
 * parser (aggio_topology_file, aggio__topo_parse_file) and, on the same
 * bytes, the Slurm topology.conf parser: both read files users write.
 *
 * Input: the file's bytes, copied into a buffer of exactly that size so
 * that AddressSanitizer catches a read past the length given.  Checks: the
 * outcome is 0 or -1 with a message exactly when -1; an accepted topology
 * has a compute node, distances that are 0 to itself, symmetric and
 * non-negative, and nearest I/O nodes that are I/O nodes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "topology.h"

static void check_topology(const struct aggio__topology *t) {
  FUZZ_ASSERT(t->nnodes > 0 && t->nodes != NULL);
  int n = t->nnodes < 16 ? t->nnodes : 16; /* pairs among the first nodes */
  for (int a = 0; a < n; a++) {
    FUZZ_ASSERT(aggio__topo_distance(t, a, a) == 0);
    for (int b = 0; b < n; b++) {
      int d = aggio__topo_distance(t, a, b);
      FUZZ_ASSERT(d >= 0 && d == aggio__topo_distance(t, b, a));
    }
    int io = aggio__topo_nearest_io(t, a);
    FUZZ_ASSERT(io == -1 || (io < t->nnodes && t->nodes[io].io));
  }
  FUZZ_ASSERT(aggio__topo_compute_node(t, 0) >= 0);
  FUZZ_ASSERT(t->latency > 0 && t->bandwidth > 0 && t->io_bandwidth > 0);
}

static void one(int slurm, const char *text, size_t size) {
  struct aggio__topology t;
  char err[200];
  int rc = slurm ? aggio__topo_parse_slurm(text, size, &t, err, sizeof err)
                 : aggio__topo_parse_file(text, size, &t, err, sizeof err);
  FUZZ_ASSERT(rc == 0 || rc == -1);
  FUZZ_ASSERT(fuzz_fits(err, sizeof err));
  FUZZ_ASSERT((rc == 0) == (err[0] == '\0'));
  if (rc == 0) {
    check_topology(&t);
    aggio__topo_free(&t);
  } else {
    FUZZ_ASSERT(t.nodes == NULL && t.nnodes == 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1 << 20))
    return 0; /* hostlist ranges may expand; larger inputs add nothing */
  char *text = malloc(size ? size : 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  one(0, text, size);
  one(1, text, size);
  free(text);
  return 0;
}
