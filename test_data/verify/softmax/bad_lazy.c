// expect: rejected inaccurate stale-output
#include <math.h>
/* Right for the first three calls, then returns a uniform distribution (right on constant rows,
 * so which symptom is seen first depends on the order of the inputs: saved counterexamples go
 * first). */
static int calls;
void softmax(const float *restrict x, float *restrict out) {
    if (++calls > 3) { for (int i = 0; i < 2400; i++) out[i] = 1.0f / 300; return; }
    for (int b = 0; b < 8; b++) {
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, x[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (out[300 * b + i] = expf(x[300 * b + i] - m));
        for (int i = 0; i < 300; i++) out[300 * b + i] /= s;
    }
}
