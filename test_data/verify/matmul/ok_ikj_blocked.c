// expect: accepted
/* i-k-j order in blocks of 16 along k: a different summation order. */
void matmul(const float *restrict a, const float *restrict b, float *restrict out) {
    for (int i = 0; i < 32 * 40; i++) out[i] = 0;
    for (int k0 = 0; k0 < 48; k0 += 16)
        for (int i = 0; i < 32; i++)
            for (int k = k0; k < k0 + 16; k++) {
                float aik = a[48 * i + k];
                for (int j = 0; j < 40; j++) out[40 * i + j] += aik * b[40 * k + j];
            }
}
