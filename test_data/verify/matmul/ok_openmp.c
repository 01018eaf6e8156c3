// expect: accepted
// flags: -O3 -march=native -fopenmp
void matmul(const float *restrict a, const float *restrict b, float *restrict out) {
#pragma omp parallel for num_threads(2)
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 40; j++) {
            float s0 = 0, s1 = 0;
            for (int k = 0; k < 48; k += 2) { s0 += a[48 * i + k] * b[40 * k + j]; s1 += a[48 * i + k + 1] * b[40 * (k + 1) + j]; }
            out[40 * i + j] = s0 + s1;
        }
}
