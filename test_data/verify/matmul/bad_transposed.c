// expect: rejected inaccurate
/* Reads b as if it were transposed. */
void matmul(const float *restrict a, const float *restrict b, float *restrict out) {
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 40; j++) {
            float s = 0;
            for (int k = 0; k < 40; k++) s += a[48 * i + k] * b[48 * j + k];
            out[40 * i + j] = s;
        }
}
