// expect: rejected timeout
void softmax(const float *restrict x, float *restrict out) {
    for (volatile int i = 0;; i++) out[0] = x[0];
}
