// expect: rejected inaccurate
void softmax(const float *restrict x, float *restrict out) {
    (void)x;
    for (int i = 0; i < 2400; i++) out[i] = 0;
}
