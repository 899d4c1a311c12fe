/*
 * topology_file.c - aggio's topology description file (hint
 * aggio_topology_file; format in docs/topology.md):
 *
 *   shape torus 8 8 8        # or: mesh X Y ..., tree, dragonfly
 *   wrap 1 1 0               # torus: wraparound per dimension (optional)
 *   latency 1us              # per hop; s, ms, us, ns
 *   bandwidth 1.8G           # bytes/s of a link; k, M, G, T (decimal)
 *   io_bandwidth 1.8G        # bytes/s of the links into I/O nodes
 *   switch top               # tree: a switch, then its parent if any
 *   switch leaf0 top
 *   node n0 0 0 0            # torus: coordinates; tree: leaf switch;
 *   io bridge0 0 0 1         #   dragonfly: group number
 *
 * One statement a line, '#' starts a comment.  Switches are declared
 * before what they hold, so the tree has no cycle by construction.  Every
 * error names its line; the topology is then empty.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topology.h"

#define MAXTOK 16

struct parser {
  struct aggio__topology *t;
  int have_shape;
  int line;
  char *err;
  size_t errlen;
};

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...) {
  int n = snprintf(p->err, p->errlen, "line %d: ", p->line);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < p->errlen)
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* A non-negative integer below 2^31 (whole token). */
static int parse_int(const char *s, int *v) {
  if (!isdigit((unsigned char)s[0]))
    return -1;
  errno = 0;
  char *end;
  long x = strtol(s, &end, 10);
  if (errno || *end || x > 0x7fffffff)
    return -1;
  *v = (int)x;
  return 0;
}

/* A positive finite number with an optional unit from `units` (name and
 * scale pairs, NULL-terminated); a bare number takes scale 1. */
struct unit { const char *name; double scale; };
static int parse_quantity(const char *s, const struct unit *units, double *v) {
  if (!isdigit((unsigned char)s[0]) && s[0] != '.')
    return -1;
  char *end;
  double x = strtod(s, &end);
  if (end == s || !isfinite(x) || x <= 0)
    return -1;
  if (*end == '\0') {
    *v = x;
    return 0;
  }
  for (const struct unit *u = units; u->name; u++)
    if (strcasecmp(end, u->name) == 0) {
      *v = x * u->scale;
      return isfinite(*v) && *v > 0 ? 0 : -1;
    }
  return -1;
}

static const struct unit time_units[] = {
    {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {NULL, 0}};
static const struct unit rate_units[] = {
    {"B/s", 1},    {"k", 1e3},     {"kB/s", 1e3}, {"M", 1e6},     {"MB/s", 1e6},
    {"G", 1e9},    {"GB/s", 1e9},  {"T", 1e12},   {"TB/s", 1e12}, {NULL, 0}};

static int do_shape(struct parser *p, char **tok, int n) {
  if (p->have_shape)
    return fail(p, "a second \"shape\"");
  if (n < 2)
    return fail(p, "\"shape\" needs torus, mesh, tree or dragonfly");
  struct aggio__topology *t = p->t;
  int grid = strcmp(tok[1], "torus") == 0 || strcmp(tok[1], "mesh") == 0;
  if (grid) {
    if (n < 3 || n - 2 > AGGIO_TOPO_MAXDIM)
      return fail(p, "\"shape %s\" needs 1 to %d dimensions", tok[1], AGGIO_TOPO_MAXDIM);
    aggio__topo_init(t, AGGIO_TOPO_TORUS);
    t->ndims = n - 2;
    for (int k = 0; k < t->ndims; k++) {
      if (parse_int(tok[2 + k], &t->dims[k]) != 0 || t->dims[k] < 1)
        return fail(p, "dimension \"%s\" is not a positive integer", tok[2 + k]);
      t->wrap[k] = tok[1][0] == 't';
    }
  } else if (strcmp(tok[1], "tree") == 0 && n == 2) {
    aggio__topo_init(t, AGGIO_TOPO_TREE);
  } else if (strcmp(tok[1], "dragonfly") == 0 && n == 2) {
    aggio__topo_init(t, AGGIO_TOPO_DRAGONFLY);
  } else {
    return fail(p, "unknown shape \"%s\" (torus, mesh, tree, dragonfly; tree and "
                   "dragonfly take no dimensions)", tok[1]);
  }
  p->have_shape = 1;
  return 0;
}

static int do_wrap(struct parser *p, char **tok, int n) {
  struct aggio__topology *t = p->t;
  if (t->shape != AGGIO_TOPO_TORUS)
    return fail(p, "\"wrap\" applies to a torus or mesh");
  if (n - 1 != t->ndims)
    return fail(p, "\"wrap\" needs %d values (0 or 1), one per dimension", t->ndims);
  for (int k = 0; k < t->ndims; k++)
    if (strcmp(tok[1 + k], "0") != 0 && strcmp(tok[1 + k], "1") != 0)
      return fail(p, "wrap value \"%s\" is not 0 or 1", tok[1 + k]);
    else
      t->wrap[k] = tok[1 + k][0] == '1';
  return 0;
}

static int do_link(struct parser *p, char **tok, int n) {
  const struct unit *u = strcmp(tok[0], "latency") == 0 ? time_units : rate_units;
  double v;
  if (n != 2 || parse_quantity(tok[1], u, &v) != 0)
    return fail(p, "\"%s\" needs one positive value%s", tok[0],
                u == time_units ? " (units s, ms, us, ns)" : " (bytes/s; units k, M, G, T)");
  if (u == time_units)
    p->t->latency = v;
  else if (strcmp(tok[0], "bandwidth") == 0)
    p->t->bandwidth = v;
  else
    p->t->io_bandwidth = v;
  return 0;
}

/* Names are unique among switches, and a switch takes no node's name;
 * nodes among themselves are checked at the end (aggio__topo_finish), in
 * O(n log n) rather than a scan per node. */
static int check_name(struct parser *p, const char *name, int is_switch) {
  if (strlen(name) >= AGGIO_TOPO_NAMELEN)
    return fail(p, "name \"%.20s...\" longer than %d bytes", name, AGGIO_TOPO_NAMELEN - 1);
  if (aggio__topo_find_switch(p->t, name) >= 0 ||
      (is_switch && aggio__topo_find(p->t, name) >= 0))
    return fail(p, "\"%s\" declared twice", name);
  return 0;
}

static int do_switch(struct parser *p, char **tok, int n) {
  struct aggio__topology *t = p->t;
  if (t->shape != AGGIO_TOPO_TREE)
    return fail(p, "\"switch\" needs \"shape tree\"");
  if (n < 2 || n > 3)
    return fail(p, "\"switch\" needs a name and optionally its parent switch");
  if (check_name(p, tok[1], 1) != 0)
    return -1;
  int parent = -1;
  if (n == 3 && (parent = aggio__topo_find_switch(t, tok[2])) < 0)
    return fail(p, "parent switch \"%s\" is not declared above", tok[2]);
  size_t m = (size_t)t->nswitches + 1;
  char(*names)[AGGIO_TOPO_NAMELEN] = realloc(t->switch_name, m * sizeof *names);
  if (names)
    t->switch_name = names;
  int *parents = names ? realloc(t->switch_parent, m * sizeof *parents) : NULL;
  if (!parents)
    return fail(p, "out of memory");
  t->switch_parent = parents;
  snprintf(t->switch_name[t->nswitches], AGGIO_TOPO_NAMELEN, "%s", tok[1]);
  t->switch_parent[t->nswitches++] = parent;
  return 0;
}

static int do_node(struct parser *p, char **tok, int n) {
  struct aggio__topology *t = p->t;
  struct aggio__topo_node nd;
  memset(&nd, 0, sizeof nd);
  nd.io = strcmp(tok[0], "io") == 0;
  if (n < 2 || check_name(p, tok[1], 0) != 0)
    return n < 2 ? fail(p, "\"%s\" needs a name", tok[0]) : -1;
  snprintf(nd.name, sizeof nd.name, "%s", tok[1]);
  nd.line = p->line;
  if (t->shape == AGGIO_TOPO_TORUS) {
    if (n - 2 != t->ndims)
      return fail(p, "\"%s\" needs %d coordinates", tok[1], t->ndims);
    for (int k = 0; k < t->ndims; k++)
      if (parse_int(tok[2 + k], &nd.coord[k]) != 0 || nd.coord[k] >= t->dims[k])
        return fail(p, "coordinate \"%s\" of \"%s\" is not in 0..%d", tok[2 + k], tok[1],
                    t->dims[k] - 1);
  } else if (t->shape == AGGIO_TOPO_TREE) {
    if (n != 3 || (nd.place = aggio__topo_find_switch(t, tok[2])) < 0)
      return fail(p, "\"%s\" needs the name of a switch declared above", tok[1]);
  } else if (n != 3 || parse_int(tok[2], &nd.place) != 0) {
    return fail(p, "\"%s\" needs its dragonfly group number", tok[1]);
  }
  if (aggio__topo_add_node(t, &nd) < 0)
    return fail(p, "out of memory");
  return 0;
}

static int statement(struct parser *p, char **tok, int n) {
  if (strcmp(tok[0], "shape") == 0)
    return do_shape(p, tok, n);
  if (!p->have_shape)
    return fail(p, "\"%s\" before \"shape\"", tok[0]);
  if (strcmp(tok[0], "wrap") == 0)
    return do_wrap(p, tok, n);
  if (strcmp(tok[0], "latency") == 0 || strcmp(tok[0], "bandwidth") == 0 ||
      strcmp(tok[0], "io_bandwidth") == 0)
    return do_link(p, tok, n);
  if (strcmp(tok[0], "switch") == 0)
    return do_switch(p, tok, n);
  if (strcmp(tok[0], "node") == 0 || strcmp(tok[0], "io") == 0)
    return do_node(p, tok, n);
  return fail(p, "unknown statement \"%.40s\"", tok[0]);
}

/* Splits a line (in place) into at most MAXTOK words; '#' ends it. */
static int tokenize(char *line, char **tok) {
  int n = 0;
  char *c = strchr(line, '#');
  if (c)
    *c = '\0';
  char *save = NULL;
  for (char *s = strtok_r(line, " \t\r\f\v", &save); s; s = strtok_r(NULL, " \t\r\f\v", &save)) {
    if (n == MAXTOK)
      return -1;
    tok[n++] = s;
  }
  return n;
}

static int parse_line(struct parser *p, const char *start, size_t n) {
  char line[1024];
  if (memchr(start, '\0', n))
    return fail(p, "NUL byte");
  if (n >= sizeof line)
    return fail(p, "longer than %zu bytes", sizeof line - 1);
  memcpy(line, start, n);
  line[n] = '\0';
  char *tok[MAXTOK];
  int k = tokenize(line, tok);
  if (k < 0)
    return fail(p, "more than %d words", MAXTOK);
  return k == 0 ? 0 : statement(p, tok, k);
}

int aggio__topo_parse_file(const char *text, size_t len, struct aggio__topology *t,
                           char *err, size_t errlen) {
  struct parser p = {t, 0, 0, err, errlen};
  aggio__topo_init(t, AGGIO_TOPO_TORUS);
  err[0] = '\0';
  size_t pos = 0;
  int rc = 0;
  while (rc == 0 && pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
    p.line++;
    rc = parse_line(&p, text + pos, n);
    pos += n + 1;
  }
  if (rc == 0 && !p.have_shape)
    rc = fail(&p, "no \"shape\" line");
  if (rc == 0 && aggio__topo_compute_node(t, 0) < 0)
    rc = fail(&p, "no compute node (\"node\" lines)");
  int first = 0, second = 0, f = rc == 0 ? aggio__topo_finish(t, &first, &second) : 0;
  if (f == -1)
    rc = fail(&p, "out of memory");
  if (f == -2) {
    p.line = t->nodes[second].line;
    rc = fail(&p, "\"%s\" declared twice (first on line %d)", t->nodes[second].name,
              t->nodes[first].line);
  }
  if (rc != 0)
    aggio__topo_free(t);
  return rc;
}
