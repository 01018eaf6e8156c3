// expect: rejected crashed
void softmax(const float *restrict x, float *restrict out) {
    volatile float *p = 0;
    *p = x[0];
    out[0] = 1;
}
