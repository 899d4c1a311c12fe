/*
 * test_topology.c - the topology sources: aggio's description file and
 * Slurm's topology.conf, well formed and malformed (each error names its
 * line), hostlist ranges, and the hop distances of each shape.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "topology.h"

static int parse(const char *text, struct aggio__topology *t, char *err) {
  return aggio__topo_parse_file(text, strlen(text), t, err, 200);
}

static int slurm(const char *text, struct aggio__topology *t, char *err) {
  return aggio__topo_parse_slurm(text, strlen(text), t, err, 200);
}

static void test_torus(void) {
  struct aggio__topology t;
  char err[200];
  const char *text = "# a 8 x 4 torus, wraparound in x only\n"
                     "shape torus 8 4\n"
                     "wrap 1 0\n"
                     "latency 2us   # per hop\n"
                     "bandwidth 1.8G\n"
                     "io_bandwidth 500MB/s\n"
                     "node a 0 0\n\tnode b 7 3\r\n"
                     "node c 3 1\n"
                     "io bridge 4 1\n";
  int rc = parse(text, &t, err);
  CHECK(rc == 0, "torus parses: %s", err);
  if (rc != 0)
    return;
  CHECK(t.shape == AGGIO_TOPO_TORUS && t.ndims == 2 && t.nnodes == 4, "shape");
  CHECK(t.latency == 2e-6 && t.bandwidth == 1.8e9 && t.io_bandwidth == 5e8, "links");
  int a = aggio__topo_find(&t, "a"), b = aggio__topo_find(&t, "b"),
      c = aggio__topo_find(&t, "c"), io = aggio__topo_find(&t, "bridge");
  CHECK(aggio__topo_distance(&t, a, b) == 1 + 3, "x wraps (1), y does not (3): %d",
        aggio__topo_distance(&t, a, b));
  CHECK(aggio__topo_distance(&t, a, a) == 0, "same node");
  CHECK(aggio__topo_distance(&t, c, io) == 1, "c to the bridge");
  CHECK(aggio__topo_nearest_io(&t, a) == io, "the only I/O node is the nearest");
  CHECK(aggio__topo_compute_node(&t, 2) == c && aggio__topo_compute_node(&t, 3) == -1,
        "compute nodes in order, the I/O node skipped");
  CHECK(aggio__topo_distance(NULL, 1, 2) == 1 && aggio__topo_distance(&t, -1, a) == 1,
        "no topology or unknown node: 1 hop");
  aggio__topo_free(&t);
  rc = parse("shape mesh 8\nnode a 0\nnode b 7\n", &t, err);
  CHECK(rc == 0 && aggio__topo_distance(&t, 0, 1) == 7, "a mesh does not wrap");
  if (rc == 0)
    aggio__topo_free(&t);
}

static void test_tree_and_dragonfly(void) {
  struct aggio__topology t;
  char err[200];
  const char *tree = "shape tree\nswitch top\nswitch l0 top\nswitch l1 top\n"
                     "node a l0\nnode b l0\nnode c l1\nio lnet0 l1\n";
  int rc = parse(tree, &t, err);
  CHECK(rc == 0, "tree parses: %s", err);
  if (rc == 0) {
    CHECK(aggio__topo_distance(&t, 0, 1) == 2, "same leaf: node, switch, node");
    CHECK(aggio__topo_distance(&t, 0, 2) == 4, "through the top switch: 4 hops");
    CHECK(aggio__topo_nearest_io(&t, 2) == 3, "lnet0");
    aggio__topo_free(&t);
  }
  rc = parse("shape dragonfly\nnode a 0\nnode b 0\nnode c 5\n", &t, err);
  CHECK(rc == 0, "dragonfly parses: %s", err);
  if (rc == 0) {
    CHECK(aggio__topo_distance(&t, 0, 1) == 1 && aggio__topo_distance(&t, 0, 2) == 3,
          "1 hop in a group, 3 between");
    aggio__topo_free(&t);
  }
}

/* Each malformed input: the error names the line and says what is wrong. */
static void test_file_errors(void) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"", "line 0: no \"shape\" line"},
      {"node a 0\n", "line 1: \"node\" before \"shape\""},
      {"shape torus 4\nnode a 4\n", "line 2: coordinate \"4\" of \"a\" is not in 0..3"},
      {"shape torus 4 4\nnode a 1\n", "line 2: \"a\" needs 2 coordinates"},
      {"shape torus 4\nnode a 0\nnode a 1\n", "line 3: \"a\" declared twice (first on line 2)"},
      {"shape tree\nswitch s\nnode a s\nio a s\n", "line 4: \"a\" declared twice"},
      {"shape tree\nswitch s\nnode a s\nswitch a\n", "line 4: \"a\" declared twice"},
      {"shape tree\nswitch s\nnode s s\n", "line 3: \"s\" declared twice"},
      {"shape torus 4\n\n# c\nbogus 1\n", "line 4: unknown statement \"bogus\""},
      {"shape cube 4\n", "line 1: unknown shape \"cube\""},
      {"shape torus 0\n", "line 1: dimension \"0\" is not a positive integer"},
      {"shape torus 4\nlatency 3 parsecs\n", "line 2: \"latency\" needs one positive value"},
      {"shape torus 4\nlatency 1h\n", "line 2: \"latency\" needs one positive value"},
      {"shape torus 4\nbandwidth -5\n", "line 2: \"bandwidth\" needs one positive value"},
      {"shape torus 4 4\nwrap 1\n", "line 2: \"wrap\" needs 2 values"},
      {"shape tree\nswitch s0 nowhere\n", "line 2: parent switch \"nowhere\" is not declared"},
      {"shape tree\nswitch s0\nnode a s9\n", "line 3: \"a\" needs the name of a switch"},
      {"shape torus 4\nswitch s0\n", "line 2: \"switch\" needs \"shape tree\""},
      {"shape dragonfly\nnode a x\n", "line 2: \"a\" needs its dragonfly group number"},
      {"shape torus 4\nio only 0\n", "no compute node"},
      {"shape torus 4\nshape mesh 4\n", "line 2: a second \"shape\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct aggio__topology t;
    char err[200] = "";
    int rc = parse(cases[i].text, &t, err);
    CHECK(rc == -1 && strstr(err, cases[i].want) != NULL, "case %zu: want \"%s\", got \"%s\"",
          i, cases[i].want, err);
    CHECK(rc == -1 && t.nodes == NULL && t.nnodes == 0, "case %zu: nothing kept", i);
  }
  /* a NUL byte inside the length given is an error, not the end */
  struct aggio__topology t;
  char err[200];
  const char nul[] = "shape torus 4\nnode a 0\0\nnode b 1\n";
  CHECK(aggio__topo_parse_file(nul, sizeof nul - 1, &t, err, sizeof err) == -1 &&
            strstr(err, "line 2: NUL byte"),
        "NUL: %s", err);
  char longname[200];
  memset(longname, 'x', sizeof longname);
  memcpy(longname, "shape torus 4\nnode ", 19);
  memcpy(longname + 150, " 0\n", 4);
  CHECK(parse(longname, &t, err) == -1 && strstr(err, "longer than 63 bytes"), "name: %s", err);
}

struct names {
  char got[512];
};
static int collect(void *ctx, const char *name) {
  struct names *n = ctx;
  strcat(n->got, name);
  strcat(n->got, " ");
  return 0;
}

static void test_hostlist(void) {
  struct names n = {""};
  char err[200] = "";
  int rc = aggio__hostlist_expand("n[01-03,10],login,r[8-9]-ib", collect, &n, err, sizeof err);
  CHECK(rc == 0 && strcmp(n.got, "n01 n02 n03 n10 login r8-ib r9-ib ") == 0,
        "expanded: \"%s\" %s", n.got, err);
  static const char *bad[] = {"n[3-1]", "n[1-", "n[]", "n[a-b]", "n[1]x[2]", "n]", "a,,b"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    n.got[0] = '\0';
    err[0] = '\0';
    CHECK(aggio__hostlist_expand(bad[i], collect, &n, err, sizeof err) == -1 && err[0],
          "\"%s\" is an error: %s", bad[i], err);
  }
}

static void test_slurm(void) {
  struct aggio__topology t;
  char err[200] = "";
  /* Slurm's documented example, leaves before their parent. */
  const char *conf = "# topology.conf\n"
                     "SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900\n"
                     "SwitchName=s1 Nodes=tux[4-7]\n"
                     "switchname=s2 Switches=s[0-1]\n"
                     "SwitchName=s3 Nodes=tux8\n"
                     "SwitchName=s4 Switches=s2,s3\n";
  int rc = slurm(conf, &t, err);
  CHECK(rc == 0, "Slurm's example parses: %s", err);
  if (rc == 0) {
    int a = aggio__topo_find(&t, "tux0"), b = aggio__topo_find(&t, "tux3"),
        c = aggio__topo_find(&t, "tux5"), d = aggio__topo_find(&t, "tux8");
    CHECK(t.nnodes == 9 && a >= 0 && d >= 0, "9 nodes");
    CHECK(aggio__topo_distance(&t, a, b) == 2, "same leaf");
    CHECK(aggio__topo_distance(&t, a, c) == 4, "leaf, s2, leaf");
    CHECK(aggio__topo_distance(&t, a, d) == 5, "s0, s2, s4, s3: %d", aggio__topo_distance(&t, a, d));
    CHECK(aggio__topo_nearest_io(&t, a) == -1, "Slurm knows no I/O nodes");
    /* lookups by name once finished (binary search) find every node */
    int all = 1;
    for (int i = 0; i < t.nnodes; i++)
      all &= aggio__topo_find(&t, t.nodes[i].name) == i;
    CHECK(all && aggio__topo_find(&t, "tux9") == -1 && aggio__topo_find(&t, "a") == -1,
          "binary search");
    aggio__topo_free(&t);
  }
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"SwitchName=s0 Nodes=a\nSwitchName=s0 Nodes=b\n", "line 2: switch \"s0\" declared twice"},
      {"SwitchName=s0 Nodes=a Color=red\n", "line 1: unknown key \"Color\""},
      {"SwitchName=s0 Switches=s9\n", "line 1: switch \"s9\" in Switches= is not declared"},
      {"SwitchName=a Switches=b\nSwitchName=b Switches=a\nSwitchName=c Nodes=n1\n",
       "switches form a loop"},
      {"SwitchName=s0 Nodes=n[5-3]\n", "line 1: bad host range"},
      {"SwitchName=s0 Nodes=n[1-3],n2\n", "line 1: node \"n2\" listed twice (first on line 1)"},
      {"SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodes=n1\n", "line 2: node \"n1\" listed twice (first on line 1)"},
      {"Nodes=n1\n", "line 1: no SwitchName="},
      {"SwitchName=s0 Nodes\n", "line 1: \"Nodes\" is not Key=Value"},
      {"BlockName=b1 Nodes=n[1-4]\n", "topology/block (BlockName=) is not supported"},
      {"# empty\n", "no Nodes= in any switch"},
      {"SwitchName=a Switches=b\nSwitchName=b\nSwitchName=c Switches=b\n",
       "line 3: switch \"b\" has two parents"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    err[0] = '\0';
    rc = slurm(cases[i].text, &t, err);
    CHECK(rc == -1 && strstr(err, cases[i].want) != NULL, "slurm case %zu: want \"%s\", got \"%s\"",
          i, cases[i].want, err);
  }
}

/* The example files shipped in bench/topology parse (their paths are the
 * arguments: ctest unit.topology_examples). */
static void test_examples(int n, char **files) {
  static char buf[1 << 20];
  for (int i = 0; i < n; i++) {
    FILE *f = fopen(files[i], "rb");
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
      fclose(f);
    CHECK(f && len > 0 && len < sizeof buf, "%s: readable", files[i]);
    struct aggio__topology t;
    char err[200] = "";
    int slurm_conf = strstr(files[i], ".conf") != NULL;
    int rc = slurm_conf ? aggio__topo_parse_slurm(buf, len, &t, err, sizeof err)
                        : aggio__topo_parse_file(buf, len, &t, err, sizeof err);
    CHECK(rc == 0 && t.nnodes >= 8, "%s parses: %s", files[i], err);
    if (rc == 0)
      aggio__topo_free(&t);
  }
}

int main(int argc, char **argv) {
  if (argc > 1) {
    test_examples(argc - 1, argv + 1);
    return test_summary();
  }
  test_torus();
  test_tree_and_dragonfly();
  test_file_errors();
  test_hostlist();
  test_slurm();
  return test_summary();
}
