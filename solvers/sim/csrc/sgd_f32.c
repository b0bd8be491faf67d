/* Online SGD of the soft committee machine on the "float32" input stream, in one pass per step.
 *
 * Built and loaded by solvers/sim/ckernel.py (cc -O3 -march=native -ffp-contract=off); the
 * numba kernels of solvers/sim/simulate.py compute the same thing and stay the fallback.
 *
 * Why C: the step at N = 1024, K = M = 2 is about 1 ns per coordinate, so what matters is how
 * often each coordinate is touched.  Here the next sample is drawn, scaled and stored, the rows
 * are updated with the current sample and both fields of the next one are summed while the new
 * normals are still in registers: one pass over J, B, z per step instead of three.  And the
 * command that runs it no longer starts numba (about 0.9 s of its fixed cost).
 *
 * The stream is the one of solvers/sim/normals.py (fill_normals_f32), bit for bit: the same
 * xoshiro256++ lanes, the same float32 operations in the same order (the Horner steps as
 * explicit fused multiply-adds, as LLVM contracts them in the numba kernel; nothing else is
 * contracted), the tails in float64 with the same libm calls.  tests/test_ckernel.py checks
 * that on whole blocks.  Words whose draw is in the tail (1 %) first get the central formula's
 * (finite) value; after the pass the true value replaces it and the fields are corrected by
 * J[i, a] (true - central).  So the fields are sums in a different order from the numba
 * kernel's: trajectories agree to rounding, not bitwise.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define LANES 16
#define SROW (LANES + 1) /* a state row: LANES vector lanes and the repair lane */
#define CHUNK 32         /* normals per block: one 64-bit word from each lane, two halves */
#define TAIL_REC 18      /* per block with a tail: its 16 words, its offset, its mask */

typedef uint64_t v8u __attribute__((vector_size(64), aligned(8)));
typedef uint32_t v16u __attribute__((vector_size(64), aligned(8)));
typedef float v16f __attribute__((vector_size(64), aligned(8)));
typedef float v8f __attribute__((vector_size(32), aligned(8)));
typedef double v8d __attribute__((vector_size(64), aligned(8)));

/* The transform's constants (solvers/generated/normal_f32.py), set once by sgd_f32_init. */
static float CP[7], CQ[7];
static double TG[32];
static int NG;
static uint32_t H_TAIL;
static double TAIL_C, TAIL_IH;

int sgd_f32_init(const float *p, const float *q, const double *g, int ng, uint32_t h_tail,
                 double tail_center, double tail_inv_half_width) {
    if (ng < 1 || ng > 32) return -1;
    memcpy(CP, p, sizeof CP);
    memcpy(CQ, q, sizeof CQ);
    memcpy(TG, g, (size_t)ng * sizeof(double));
    NG = ng;
    H_TAIL = h_tail;
    TAIL_C = tail_center;
    TAIL_IH = tail_inv_half_width;
    return 0;
}

/* ---- xoshiro256++ ---------------------------------------------------------------------- */

static inline uint64_t rotl1(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline v8u rotl8(v8u x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_raw(uint64_t *st, int lane) {
    uint64_t s0 = st[lane], s1 = st[SROW + lane], s2 = st[2 * SROW + lane], s3 = st[3 * SROW + lane];
    uint64_t out = rotl1(s0 + s3, 23) + s0, t = s1 << 17;
    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl1(s3, 45);
    st[lane] = s0; st[SROW + lane] = s1; st[2 * SROW + lane] = s2; st[3 * SROW + lane] = s3;
    return out;
}

typedef struct { v8u s[2][4]; } lanes_t; /* lanes 0-7 and 8-15, state words 0-3 */

static inline void lanes_load(lanes_t *L, const uint64_t *st) {
    for (int g = 0; g < 2; g++)
        for (int w = 0; w < 4; w++) memcpy(&L->s[g][w], st + w * SROW + 8 * g, 64);
}

static inline void lanes_store(const lanes_t *L, uint64_t *st) {
    for (int g = 0; g < 2; g++)
        for (int w = 0; w < 4; w++) memcpy(st + w * SROW + 8 * g, &L->s[g][w], 64);
}

static inline v8u lanes_next(v8u *s) {
    v8u out = rotl8(s[0] + s[3], 23) + s[0], t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl8(s[3], 45);
    return out;
}

/* ---- the float32 inverse CDF ------------------------------------------------------------- */

static inline v16f vfma(v16f a, v16f b, v16f c) {
#if defined(__AVX512F__)
    return (v16f)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
    v16f r;
    for (int i = 0; i < 16; i++) r[i] = fmaf(a[i], b[i], c[i]);
    return r;
#endif
}

static inline v16f splat16(float c) { return (v16f){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c}; }

/* the central rational function's coefficients, broadcast once per call (kept in registers) */
typedef struct { v16f p[7], q[7]; } central_t;

static inline void central_load(central_t *C) {
    for (int j = 0; j < 7; j++) { C->p[j] = splat16(CP[j]); C->q[j] = splat16(CQ[j]); }
}

/* u = (h >> 9) 2^-23 + 2^-24, z = sign(bit 8) u P(y)/Q(y), y = (1 - u)(1 + u) */
static inline v16f central(v16u h, const central_t *C) {
    v16f u = (v16f)((h >> 9) | 0x3F800000u) - 1.0f;
    u = u + 0x1p-24f;
    v16f y = (1.0f - u) * (1.0f + u);
    v16f P = C->p[6], Q = C->q[6];
    for (int j = 5; j >= 0; j--) { P = vfma(P, y, C->p[j]); Q = vfma(Q, y, C->q[j]); }
    v16f r = u * (P / Q);
    return (v16f)((v16u)r ^ ((h << 23) & 0x80000000u));
}

static inline uint32_t tail_mask(v16u h) {
#if defined(__AVX512F__)
    return (uint32_t)_mm512_cmpge_epu32_mask((__m512i)h, _mm512_set1_epi32((int)H_TAIL));
#else
    uint32_t m = 0;
    for (int i = 0; i < 16; i++) m |= (uint32_t)(h[i] >= H_TAIL) << i;
    return m;
#endif
}

/* sqrt(2) erfinv(u) with the sign of bit 8, float64, for a word in the tail */
static double tail_value(uint32_t h) {
    double u = ((double)(h >> 9) + 0.5) * 0x1p-23;
    double sig = sqrt(-log((1.0 - u) * (1.0 + u)));
    double t = (sig - TAIL_C) * TAIL_IH;
    double acc = 0.0;
    for (int j = NG - 1; j >= 0; j--) acc = acc * t + TG[j];
    double v = sig * acc;
    return ((h >> 8) & 1u) ? -v : v;
}

typedef double v8dt __attribute__((vector_size(64)));
typedef int64_t v8i __attribute__((vector_size(64)));

/* tail_value of 8 words at once: the same IEEE operations lane by lane (log is libm's, one
 * lane at a time), so the same bits as tail_value; the Horner chain of 14 dependent steps is
 * what costs, and here 8 of them run side by side. */
static void tail_values8(const uint32_t *h, double *out) {
    v8dt u, lg, acc = {0}, sig, t;
    for (int l = 0; l < 8; l++) u[l] = ((double)(h[l] >> 9) + 0.5) * 0x1p-23;
    v8dt y = (1.0 - u) * (1.0 + u);
    for (int l = 0; l < 8; l++) lg[l] = -log(y[l]);
    for (int l = 0; l < 8; l++) sig[l] = sqrt(lg[l]);
    t = (sig - TAIL_C) * TAIL_IH;
    for (int j = NG - 1; j >= 0; j--) acc = acc * t + TG[j];
    v8dt v = sig * acc;
    for (int l = 0; l < 8; l++) out[l] = ((h[l] >> 8) & 1u) ? -v[l] : v[l];
}

static inline v8d widen_lo(v16f f) {
    return __builtin_convertvector(__builtin_shufflevector(f, f, 0, 1, 2, 3, 4, 5, 6, 7), v8d);
}
static inline v8d widen_hi(v16f f) {
    return __builtin_convertvector(__builtin_shufflevector(f, f, 8, 9, 10, 11, 12, 13, 14, 15), v8d);
}
static inline v8d load8(const double *p) { v8d v; memcpy(&v, p, 64); return v; }
static inline void store8(double *p, v8d v) { memcpy(p, &v, 64); }

/* The last n < CHUNK normals of a sample: ceil(n/2) words from lanes 0, 1, ... (scalar path;
 * the lanes must be in st). */
static void draw_rest(uint64_t *st, const double *scale, double *z, int64_t n) {
    uint32_t h[CHUNK];
    for (int l = 0; 2 * l < n; l++) {
        uint64_t w = next_raw(st, l);
        h[2 * l] = (uint32_t)w;
        h[2 * l + 1] = (uint32_t)(w >> 32);
    }
    for (int j = 0; j < n; j++) {
        double v;
        if (h[j] >= H_TAIL) {
            v = tail_value(h[j]);
        } else {
            central_t C;
            central_load(&C);
            v16f f = central((v16u){0} + h[j], &C);
            v = (double)f[0];
        }
        z[j] = scale[j] * v;
    }
}

/* z = scale * next n normals of the stream (the reference for the tests) */
void sgd_f32_fill(uint64_t *st, const double *scale, double *z, int64_t n) {
    central_t C;
    central_load(&C);
    lanes_t L;
    lanes_load(&L, st);
    int64_t a = 0;
    for (; a + CHUNK <= n; a += CHUNK) {
        v16u ha = (v16u)lanes_next(L.s[0]), hb = (v16u)lanes_next(L.s[1]);
        v16f fa = central(ha, &C), fb = central(hb, &C);
        store8(z + a, load8(scale + a) * widen_lo(fa));
        store8(z + a + 8, load8(scale + a + 8) * widen_hi(fa));
        store8(z + a + 16, load8(scale + a + 16) * widen_lo(fb));
        store8(z + a + 24, load8(scale + a + 24) * widen_hi(fb));
        uint32_t m = tail_mask(ha) | (tail_mask(hb) << 16);
        while (m) {
            int j = __builtin_ctz(m);
            z[a + j] = scale[a + j] * tail_value(j < 16 ? ha[j] : hb[j - 16]);
            m &= m - 1;
        }
    }
    lanes_store(&L, st);
    draw_rest(st, scale + a, z + a, n - a);
}

/* z[a] = normal(h[a]) for given words, unscaled, with the step loop's vectorised tails (the
 * exhaustive test against the numba transform) */
void sgd_f32_transform(const uint32_t *h, double *z, int64_t n) {
    central_t C;
    central_load(&C);
    int64_t a = 0;
    for (; a + 16 <= n; a += 16) {
        v16u hv;
        memcpy(&hv, h + a, 64);
        v16f f = central(hv, &C);
        store8(z + a, widen_lo(f));
        store8(z + a + 8, widen_hi(f));
    }
    for (; a < n; a++) z[a] = (double)central((v16u){0} + h[a], &C)[0];
    uint32_t th[8];
    int64_t tb[8];
    double tv[8];
    int nq = 0;
    for (a = 0; a <= n; a++) {
        if (a < n && h[a] >= H_TAIL) {
            th[nq] = h[a];
            tb[nq++] = a;
        }
        if (nq == 8 || (a == n && nq > 0)) {
            for (int q = nq; q < 8; q++) th[q] = 0;
            tail_values8(th, tv);
            for (int q = 0; q < nq; q++) z[tb[q]] = tv[q];
            nq = 0;
        }
    }
}

/* ---- the step loop ------------------------------------------------------------------------ */

static inline double g_act(int act, double x) { return act == 0 ? erf(x * 0.70710678118654752440) : x; }
static inline double gprime_act(int act, double x) {
    return act == 0 ? 0.79788456080286535588 * exp(-0.5 * x * x) : 1.0;
}
static inline double hsum8(v8d v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

/* doubles of work space sgd_f32_rows needs */
int64_t sgd_f32_work_size(int64_t N, int64_t K, int64_t M) {
    return N + TAIL_REC * (N / CHUNK + 1) + 9 * (K + M) + K + 8;
}

/* n_steps SGD steps, weights in row layout J (K, N), B (M, N).  On entry z, x, y hold the
 * current sample and its fields, on exit the next ones.  Only coordinates a < n_tr are
 * updated.  Returns -1, or the step t at which a field was not finite. */
int64_t sgd_f32_rows(uint64_t *st, double *J, const double *B, const double *scale, int64_t N,
                     int64_t n_tr, int64_t K, int64_t M, double eta, int act, int64_t n_steps,
                     double *z, double *x, double *y, double *work) {
    const double sqM = sqrt((double)M), isq = 1.0 / sqrt((double)N);
    const double coef = eta * (sqM / K) / sqrt((double)N);
    const int64_t KM = K + M;
    double *zn = work;
    uint64_t *tails = (uint64_t *)(work + N);
    double *acc_mem = work + N + TAIL_REC * (N / CHUNK + 1);
    v8d *acc = (v8d *)acc_mem; /* only ever accessed through memcpy-free loads of aligned(8) */
    double *corr = acc_mem + 8 * KM;
    double *c = corr + KM;
    double *z_in = z;
    int64_t bad = -1;
    central_t C;
    central_load(&C);
    uint32_t th[CHUNK + 8];
    int64_t tb[CHUNK + 8];
    double tv[CHUNK + 8];

    for (int64_t t = 0; t < n_steps; t++) {
        double sig = 0.0, zeta = 0.0;
        int finite = 1;
        for (int64_t i = 0; i < K; i++) {
            if (!isfinite(x[i])) { finite = 0; break; }
            sig += g_act(act, x[i]);
        }
        for (int64_t n = 0; n < M && finite; n++) zeta += g_act(act, y[n]);
        double delta = finite ? zeta / sqM - sig * (sqM / K) : NAN;
        if (!isfinite(delta)) { bad = t; break; }
        for (int64_t i = 0; i < K; i++) c[i] = coef * delta * gprime_act(act, x[i]);
        for (int64_t r = 0; r < KM; r++) { acc[r] = (v8d){0}; corr[r] = 0.0; }

        lanes_t L;
        lanes_load(&L, st);
        int64_t nt = 0, a = 0;
        for (; a + CHUNK <= N; a += CHUNK) {
            v8u wa = lanes_next(L.s[0]), wb = lanes_next(L.s[1]);
            v16u ha = (v16u)wa, hb = (v16u)wb;
            v16f fa = central(ha, &C), fb = central(hb, &C);
            v8d w0 = load8(scale + a) * widen_lo(fa), w1 = load8(scale + a + 8) * widen_hi(fa);
            v8d w2 = load8(scale + a + 16) * widen_lo(fb), w3 = load8(scale + a + 24) * widen_hi(fb);
            store8(zn + a, w0); store8(zn + a + 8, w1); store8(zn + a + 16, w2); store8(zn + a + 24, w3);
            /* remember blocks with a tail word without a branch: the record is always written,
             * and kept only if the mask is not zero */
            uint32_t m = tail_mask(ha) | (tail_mask(hb) << 16);
            uint64_t *rec = tails + TAIL_REC * nt;
            memcpy(rec, &wa, 64);
            memcpy(rec + 8, &wb, 64);
            rec[16] = (uint64_t)a;
            rec[17] = m;
            nt += (m != 0);
            if (a + CHUNK <= n_tr) {
                v8d z0 = load8(z + a), z1 = load8(z + a + 8), z2 = load8(z + a + 16), z3 = load8(z + a + 24);
                for (int64_t i = 0; i < K; i++) {
                    double *Ji = J + i * N + a;
                    const double ci = c[i];
                    v8d j0 = load8(Ji) + ci * z0, j1 = load8(Ji + 8) + ci * z1;
                    v8d j2 = load8(Ji + 16) + ci * z2, j3 = load8(Ji + 24) + ci * z3;
                    store8(Ji, j0); store8(Ji + 8, j1); store8(Ji + 16, j2); store8(Ji + 24, j3);
                    acc[i] += (j0 * w0 + j1 * w1) + (j2 * w2 + j3 * w3);
                }
            } else {
                for (int64_t i = 0; i < K; i++) {
                    double *Ji = J + i * N;
                    double s = 0.0;
                    for (int64_t b = a; b < a + CHUNK; b++) {
                        if (b < n_tr) Ji[b] += c[i] * z[b];
                        s += Ji[b] * zn[b];
                    }
                    corr[i] += s;
                }
            }
            for (int64_t n = 0; n < M; n++) {
                const double *Bn = B + n * N + a;
                acc[K + n] += (load8(Bn) * w0 + load8(Bn + 8) * w1) + (load8(Bn + 16) * w2 + load8(Bn + 24) * w3);
            }
        }
        lanes_store(&L, st);
        if (a < N) { /* the last N mod 32 coordinates */
            draw_rest(st, scale + a, zn + a, N - a);
            for (int64_t i = 0; i < K; i++) {
                double *Ji = J + i * N;
                double s = 0.0;
                for (int64_t b = a; b < N; b++) {
                    if (b < n_tr) Ji[b] += c[i] * z[b];
                    s += Ji[b] * zn[b];
                }
                corr[i] += s;
            }
            for (int64_t n = 0; n < M; n++) {
                const double *Bn = B + n * N;
                double s = 0.0;
                for (int64_t b = a; b < N; b++) s += Bn[b] * zn[b];
                corr[K + n] += s;
            }
        }
        /* the tail words: true value in, central value out, fields corrected; 8 at a time */
        int64_t nq = 0;
        for (int64_t r = 0; r <= nt; r++) {
            if (r < nt) {
                const uint64_t *rec = tails + TAIL_REC * r;
                const uint32_t *h = (const uint32_t *)rec;
                uint32_t m = (uint32_t)rec[17];
                while (m) {
                    int j = __builtin_ctz(m);
                    th[nq] = h[j];
                    tb[nq++] = (int64_t)rec[16] + j;
                    m &= m - 1;
                }
            }
            if (nq >= 8 || (r == nt && nq > 0)) {
                int64_t done = 0;
                for (; done < nq; done += 8) {
                    for (int64_t q = nq; q < done + 8; q++) th[q] = 0; /* padding lanes */
                    tail_values8(th + done, tv + done);
                }
                for (int64_t q = 0; q < nq; q++) {
                    int64_t b = tb[q];
                    double v = scale[b] * tv[q];
                    double d = v - zn[b];
                    zn[b] = v;
                    for (int64_t i = 0; i < K; i++) corr[i] += J[i * N + b] * d;
                    for (int64_t n = 0; n < M; n++) corr[K + n] += B[n * N + b] * d;
                }
                nq = 0;
            }
        }
        for (int64_t i = 0; i < K; i++) x[i] = (hsum8(acc[i]) + corr[i]) * isq;
        for (int64_t n = 0; n < M; n++) y[n] = (hsum8(acc[K + n]) + corr[K + n]) * isq;
        double *tmp = z; z = zn; zn = tmp;
    }
    if (z != z_in) memcpy(z_in, z, (size_t)N * sizeof(double));
    return bad;
}
