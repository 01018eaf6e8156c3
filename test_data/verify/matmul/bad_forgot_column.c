// expect: rejected unwritten
void matmul(const float *restrict a, const float *restrict b, float *restrict out) {
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 39; j++) {
            float s = 0;
            for (int k = 0; k < 48; k++) s += a[48 * i + k] * b[40 * k + j];
            out[40 * i + j] = s;
        }
}
