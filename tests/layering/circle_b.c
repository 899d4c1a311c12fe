/* The other half of the deliberate circle (circle_a.c). */
int layering_circle_a(int n);
int layering_circle_b(int n);
int layering_circle_b(int n) { return n > 0 ? layering_circle_a(n - 1) : 1; }
