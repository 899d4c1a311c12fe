/*
 * topology_slurm.c - Slurm's topology.conf (topology/tree plugin), read as
 * clusters already have it:
 *
 *   SwitchName=s0 Nodes=tux[0-3] LinkSpeed=900
 *   SwitchName=s1 Nodes=tux[4-7]
 *   SwitchName=s2 Switches=s[0-1]
 *
 * Leaf switches usually come before their parents, so the parser reads the
 * text twice: the first pass names the switches, the second links them and
 * places the nodes.  Keys are case-insensitive as in Slurm.  Slurm knows no
 * I/O nodes: from this source, the shortest and longest placements have
 * nothing to measure and the topology placement weighs the gathering (C1)
 * alone (docs/topology.md).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topology.h"

#define MAX_RANGE 100000 /* names one bracket range may expand to */

struct slurm {
  struct aggio__topology *t;
  int line;
  int pass;
  int sw; /* the current line's switch */
  char *err;
  size_t errlen;
};

static int fail(struct slurm *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct slurm *s, const char *fmt, ...) {
  int n = snprintf(s->err, s->errlen, "line %d: ", s->line);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < s->errlen)
    vsnprintf(s->err + n, s->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- hostlists: prefix[1-3,07-09]suffix,name ----------------------------------- */

static int expand_item(const char *item, size_t n, aggio__hostname_cb cb, void *ctx,
                       char *err, size_t errlen) {
  char name[AGGIO_TOPO_NAMELEN];
  const char *lb = memchr(item, '[', n);
  if (!lb) {
    if (n == 0 || n >= sizeof name || memchr(item, ']', n)) {
      snprintf(err, errlen, "bad host name \"%.*s\"", (int)(n > 40 ? 40 : n), item);
      return -1;
    }
    memcpy(name, item, n);
    name[n] = '\0';
    return cb(ctx, name);
  }
  const char *rb = memchr(lb, ']', n - (size_t)(lb - item));
  if (!rb || rb == lb + 1 || memchr(rb + 1, '[', n - (size_t)(rb + 1 - item))) {
    snprintf(err, errlen, "bad host range in \"%.*s\"", (int)(n > 40 ? 40 : n), item);
    return -1;
  }
  int pre = (int)(lb - item), suf = (int)(item + n - (rb + 1));
  for (const char *r = lb + 1; r < rb;) {
    const char *comma = memchr(r, ',', (size_t)(rb - r));
    const char *end = comma ? comma : rb;
    unsigned long lo, hi;
    int width = 0, k = 0;
    char *e;
    while (r + width < end && isdigit((unsigned char)r[width]))
      width++;
    if (width == 0 || width > 9)
      goto bad;
    lo = strtoul(r, &e, 10);
    hi = lo;
    if (e < end && *e == '-') {
      if (e + 1 >= end || !isdigit((unsigned char)e[1]) || end - (e + 1) > 9)
        goto bad;
      hi = strtoul(e + 1, &e, 10);
    }
    if (e != end || hi < lo || hi - lo >= MAX_RANGE)
      goto bad;
    for (unsigned long v = lo; v <= hi; v++) {
      k = snprintf(name, sizeof name, "%.*s%0*lu%.*s", pre, item, width, v, suf, rb + 1);
      if (k < 0 || (size_t)k >= sizeof name) {
        snprintf(err, errlen, "host name longer than %d bytes", AGGIO_TOPO_NAMELEN - 1);
        return -1;
      }
      int rc = cb(ctx, name);
      if (rc != 0)
        return rc;
    }
    r = comma ? comma + 1 : rb;
  }
  return 0;
bad:
  snprintf(err, errlen, "bad host range in \"%.*s\"", (int)(n > 40 ? 40 : n), item);
  return -1;
}

int aggio__hostlist_expand(const char *list, aggio__hostname_cb cb, void *ctx, char *err,
                           size_t errlen) {
  const char *s = list;
  while (*s) {
    const char *e = s;
    int depth = 0;
    while (*e && (depth > 0 || *e != ',')) {
      depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
      e++;
    }
    int rc = expand_item(s, (size_t)(e - s), cb, ctx, err, errlen);
    if (rc != 0)
      return rc;
    s = *e ? e + 1 : e;
  }
  return 0;
}

/* ---- the two passes ------------------------------------------------------------ */

static int add_switch(void *ctx, const char *name) {
  struct slurm *s = ctx;
  struct aggio__topology *t = s->t;
  if (aggio__topo_find_switch(t, name) >= 0)
    return fail(s, "switch \"%s\" declared twice", name);
  size_t m = (size_t)t->nswitches + 1;
  char(*names)[AGGIO_TOPO_NAMELEN] = realloc(t->switch_name, m * sizeof *names);
  if (names)
    t->switch_name = names;
  int *parents = names ? realloc(t->switch_parent, m * sizeof *parents) : NULL;
  if (!parents)
    return fail(s, "out of memory");
  t->switch_parent = parents;
  snprintf(t->switch_name[t->nswitches], AGGIO_TOPO_NAMELEN, "%s", name);
  t->switch_parent[t->nswitches++] = -1;
  return 0;
}

static int link_child(void *ctx, const char *name) {
  struct slurm *s = ctx;
  int c = aggio__topo_find_switch(s->t, name);
  if (c < 0)
    return fail(s, "switch \"%s\" in Switches= is not declared", name);
  if (s->t->switch_parent[c] >= 0)
    return fail(s, "switch \"%s\" has two parents", name);
  if (c == s->sw)
    return fail(s, "switch \"%s\" is its own child", name);
  s->t->switch_parent[c] = s->sw;
  return 0;
}

static int add_node(void *ctx, const char *name) {
  struct slurm *s = ctx;
  struct aggio__topo_node nd;
  memset(&nd, 0, sizeof nd);
  snprintf(nd.name, sizeof nd.name, "%s", name);
  nd.line = s->line; /* a node under two switches is found at the end */
  nd.place = s->sw;
  return aggio__topo_add_node(s->t, &nd) < 0 ? fail(s, "out of memory") : 0;
}

static int hostlist(struct slurm *s, const char *list, aggio__hostname_cb cb) {
  char why[160];
  why[0] = '\0';
  int rc = aggio__hostlist_expand(list, cb, s, why, sizeof why);
  return rc != 0 && why[0] ? fail(s, "%s", why) : rc;
}

/* One line: Key=Value words; SwitchName= must be among them. */
static int slurm_line(struct slurm *s, char *line) {
  char *c = strchr(line, '#');
  if (c)
    *c = '\0';
  const char *sw = NULL, *nodes = NULL, *children = NULL;
  char *save = NULL;
  for (char *w = strtok_r(line, " \t\r\f\v", &save); w; w = strtok_r(NULL, " \t\r\f\v", &save)) {
    char *eq = strchr(w, '=');
    if (!eq || eq[1] == '\0')
      return fail(s, "\"%.40s\" is not Key=Value", w);
    *eq = '\0';
    if (strcasecmp(w, "SwitchName") == 0)
      sw = eq + 1;
    else if (strcasecmp(w, "Nodes") == 0)
      nodes = eq + 1;
    else if (strcasecmp(w, "Switches") == 0)
      children = eq + 1;
    else if (strcasecmp(w, "BlockName") == 0)
      return fail(s, "topology/block (BlockName=) is not supported; topology/tree is");
    else if (strcasecmp(w, "LinkSpeed") != 0)
      return fail(s, "unknown key \"%.40s\"", w);
  }
  if (!sw)
    return nodes || children ? fail(s, "no SwitchName=") : 0;
  if (s->pass == 0)
    return add_switch(s, sw);
  s->sw = aggio__topo_find_switch(s->t, sw);
  if (children && hostlist(s, children, link_child) != 0)
    return -1;
  return nodes ? hostlist(s, nodes, add_node) : 0;
}

static int slurm_pass(struct slurm *s, const char *text, size_t len) {
  size_t pos = 0;
  s->line = 0;
  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
    s->line++;
    if (memchr(text + pos, '\0', n))
      return fail(s, "NUL byte");
    char *line = malloc(n + 1);
    if (!line)
      return fail(s, "out of memory");
    memcpy(line, text + pos, n);
    line[n] = '\0';
    int rc = slurm_line(s, line);
    free(line);
    if (rc != 0)
      return rc;
    pos += n + 1;
  }
  return 0;
}

/* Switches= links made in pass 1 could form a loop; a walk up longer than
 * the switch count finds it. */
static int check_loops(struct slurm *s) {
  struct aggio__topology *t = s->t;
  for (int i = 0; i < t->nswitches; i++) {
    int steps = 0;
    for (int q = i; q >= 0; q = t->switch_parent[q])
      if (++steps > t->nswitches) {
        s->line = 0;
        snprintf(s->err, s->errlen, "switches form a loop through \"%s\"", t->switch_name[i]);
        return -1;
      }
  }
  return 0;
}

int aggio__topo_parse_slurm(const char *text, size_t len, struct aggio__topology *t,
                            char *err, size_t errlen) {
  struct slurm s = {t, 0, 0, -1, err, errlen};
  aggio__topo_init(t, AGGIO_TOPO_TREE);
  err[0] = '\0';
  int rc = slurm_pass(&s, text, len);
  if (rc == 0) {
    s.pass = 1;
    rc = slurm_pass(&s, text, len);
  }
  if (rc == 0)
    rc = check_loops(&s);
  if (rc == 0 && t->nnodes == 0) {
    snprintf(err, errlen, "no Nodes= in any switch");
    rc = -1;
  }
  int first = 0, second = 0, f = rc == 0 ? aggio__topo_finish(t, &first, &second) : 0;
  if (f == -1)
    rc = fail(&s, "out of memory");
  if (f == -2) {
    s.line = t->nodes[second].line;
    rc = fail(&s, "node \"%s\" listed twice (first on line %d)", t->nodes[second].name,
              t->nodes[first].line);
  }
  if (rc != 0)
    aggio__topo_free(t);
  return rc;
}
