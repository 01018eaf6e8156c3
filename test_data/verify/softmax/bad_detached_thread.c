// expect: rejected unwritten changed-after-return
// flags: -O3 -march=native -pthread
#include <math.h>
#include <pthread.h>
#include <time.h>
/* Returns at once and finishes the work in a detached thread. */
static const float *gx;
static float *gout;
static void *work(void *arg) {
    (void)arg;
    for (int b = 0; b < 8; b++) {
        struct timespec t = {0, 2000000};
        nanosleep(&t, 0);
        float m = -INFINITY, s = 0;
        for (int i = 0; i < 300; i++) m = fmaxf(m, gx[300 * b + i]);
        for (int i = 0; i < 300; i++) s += (gout[300 * b + i] = expf(gx[300 * b + i] - m));
        for (int i = 0; i < 300; i++) gout[300 * b + i] /= s;
    }
    return 0;
}
void softmax(const float *restrict x, float *restrict out) {
    pthread_t t;
    gx = x;
    gout = out;
    pthread_create(&t, 0, work, 0);
    pthread_detach(t);
}
