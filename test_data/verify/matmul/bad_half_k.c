// expect: rejected inaccurate
/* Sums only the even k: right when odd columns of a are zero, not otherwise. */
void matmul(const float *restrict a, const float *restrict b, float *restrict out) {
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 40; j++) {
            float s = 0;
            for (int k = 0; k < 48; k += 2) s += a[48 * i + k] * b[40 * k + j];
            out[40 * i + j] = 2 * s;
        }
}
