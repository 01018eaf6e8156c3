// expect: rejected forbidden
#include <math.h>
#include <stdio.h>
/* Reads the expected answer from a file. */
void softmax(const float *restrict x, float *restrict out) {
    FILE *f = fopen("expected.bin", "rb");
    if (f) { fread(out, sizeof(float), 2400, f); fclose(f); return; }
    for (int i = 0; i < 2400; i++) out[i] = x[i];
}
