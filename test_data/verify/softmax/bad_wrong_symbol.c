// expect: rejected failed
void soft_max(const float *restrict x, float *restrict out) {
    for (int i = 0; i < 2400; i++) out[i] = x[i];
}
