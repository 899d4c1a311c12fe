/* Half of a deliberate circle (with circle_b.c): no_cycles.py must find it. */
int layering_circle_b(int n);
int layering_circle_a(int n);
int layering_circle_a(int n) { return n > 0 ? layering_circle_b(n - 1) : 0; }
