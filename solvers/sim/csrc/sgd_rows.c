/* Online SGD of the soft committee machine (row layout) on the xoshiro input streams, one pass
 * over the coordinates per step.
 *
 * Built and loaded by solvers/sim/ckernel.py (cc -O3 -march=native -ffp-contract=off); the
 * numba kernels (solvers/sim/kernels.py) compute the same thing and stay the fallback and the
 * kernel of the column layout and of NumPy's stream.
 *
 * Why C: at N = 1024, K = M = 2 a step costs about a nanosecond per coordinate, so what
 * matters is how often each coordinate is touched.  Here the next sample is drawn, scaled and
 * stored a block of BLOCK coordinates at a time, then the block's rows are updated with the
 * current sample and both fields of the next one are summed while the block is in L1: one pass
 * over J, B, z per step instead of three.  The draw runs the generator's lanes in groups of a
 * vector register (GL below), the float32 transforms of several groups interleaved (GF).  And
 * the command that runs it does not start numba (about 0.9 s of fixed cost).
 *
 * Every instruction-set path (AVX-512, AVX2 + FMA, plain C) does the same IEEE operations in the
 * same order element by element, so a run gives the same bits on each.
 *
 * The streams are those of solvers/sim/normals.py, bit for bit (tests/test_ckernel.py):
 *   GEN_ZIG  ("xoshiro")  one 64-bit word per normal, ziggurat: the same integer fast-path
 *            tables, the rejected words redrawn afterwards in increasing order from the repair
 *            lane with the same float64 operations and libm calls;
 *   GEN_F32  ("float32")  two 32-bit halves per word, the float32 inverse CDF: the same float32
 *            operations in the same order (the Horner steps as explicit fused multiply-adds,
 *            as LLVM contracts them in the numba kernel; nothing else is contracted), the 0.1 %
 *            of tail words in float64.
 * A word whose normal is not final after the vector pass (a ziggurat rejection, a float32
 * tail) first gets the pass's finite value; afterwards the true value replaces it and the
 * fields are corrected by J[i, a] (true - first).  So the fields are the same sums as the numba
 * kernel's in another order: trajectories agree to rounding, not bitwise.
 */
#include <math.h>
#include <pthread.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__AVX__)
#include <immintrin.h>
#endif

#define LANES 16
#define SROW (LANES + 1) /* a state row: LANES vector lanes and the repair lane */
#define CHUNK 32         /* normals per block: one 64-bit word from each lane, two halves */
#define REC 34           /* a block's record: its <= 32 words, offset, mask of words to redo */
#ifndef BLOCK
#define BLOCK 256        /* coordinates drawn, then updated, at a time */
#endif

typedef double v8d __attribute__((vector_size(64), aligned(8)));

enum { GEN_ZIG = 1, GEN_F32 = 2 }; /* the codes of solvers/sim/simulate.py's _GEN_CODE */

/* The transforms' constants, set once by sgd_init: the float32 inverse CDF's
 * (solvers/generated/normal_f32.py) and the ziggurat's tables (solvers/sim/streams.py). */
#define CDEG 7 /* degree of the central rational function's P and Q */
static float CP[CDEG + 1], CQ[CDEG + 1];
static double TG[32];
static int NG;
static uint32_t H_TAIL;
static double TAIL_C, TAIL_IH;
static uint64_t ZKI[256];
static double ZWS[512], ZX[256], ZRATIO[256], ZF[257], ZR, ZINV_R;

int sgd_init(const float *p, const float *q, int ncentral, const double *g, int ng, uint32_t h_tail,
             double tail_center, double tail_inv_half_width, const uint64_t *ki,
             const double *ws, const double *x, const double *ratio, const double *f, double r) {
    if (ncentral != CDEG + 1 || ng < 1 || ng > 32) return -1;
    memcpy(CP, p, sizeof CP);
    memcpy(CQ, q, sizeof CQ);
    memcpy(TG, g, (size_t)ng * sizeof(double));
    NG = ng;
    H_TAIL = h_tail;
    TAIL_C = tail_center;
    TAIL_IH = tail_inv_half_width;
    memcpy(ZKI, ki, sizeof ZKI);
    memcpy(ZWS, ws, sizeof ZWS);
    memcpy(ZX, x, sizeof ZX);
    memcpy(ZRATIO, ratio, sizeof ZRATIO);
    memcpy(ZF, f, sizeof ZF);
    ZR = r;
    ZINV_R = 1.0 / r;
    return 0;
}

/* ---- xoshiro256++ ---------------------------------------------------------------------- */

static inline uint64_t rotl1(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_raw(uint64_t *st, int lane) {
    uint64_t s0 = st[lane], s1 = st[SROW + lane], s2 = st[2 * SROW + lane], s3 = st[3 * SROW + lane];
    uint64_t out = rotl1(s0 + s3, 23) + s0, t = s1 << 17;
    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl1(s3, 45);
    st[lane] = s0; st[SROW + lane] = s1; st[2 * SROW + lane] = s2; st[3 * SROW + lane] = s3;
    return out;
}

/* The generator runs in groups of GL lanes, one vector register per state word: GL = 8 (a zmm
 * register) with AVX-512, 4 (a ymm register) otherwise.  The groups drawn side by side (GF, GZ
 * below) run through all the chunks of a block before the next ones start. */
#if defined(__AVX512F__)
#define GL 8
#else
#define GL 4
#endif
#define GB (8 * GL) /* bytes in a vector of GL 64-bit words */
/* Lane groups drawn side by side.  The float32 transform of GF groups runs its Horner steps
 * interleaved (central_gf): one vector's two chains of 7 dependent fused multiply-adds leave
 * the FMA units idle.  AVX2: all four groups, although their state no longer fits the 16
 * registers beside the transform and goes through the stack (which costs less than the idle
 * units: the draw alone 1.2x, the step loop 1.12x faster than one group at a time, measured
 * on the AVX2 build on an AVX-512 EPYC); AVX-512: two (its 32 registers).  The ziggurat (GZ),
 * whose transform is short: two groups on AVX-512, one on AVX2 (two or four measured no
 * faster). */
#ifndef GF
#if defined(__AVX512F__)
#define GF 2
#else
#define GF 4
#endif
#endif
#ifndef GZ
#if defined(__AVX512F__)
#define GZ 2
#else
#define GZ 1
#endif
#endif
typedef uint64_t gu __attribute__((vector_size(GB))); /* GL words */
typedef uint32_t gh __attribute__((vector_size(GB))); /* their 2 GL halves */
typedef float gf __attribute__((vector_size(GB)));    /* 2 GL floats */
typedef double gd __attribute__((vector_size(GB)));   /* GL doubles */
/* the same in memory at any 8-byte boundary (a memcpy of the types above into a local went
 * through the stack in 16-byte pieces on AVX2) */
typedef uint64_t gu_m __attribute__((vector_size(GB), aligned(8)));
typedef uint32_t gh_m __attribute__((vector_size(GB), aligned(4)));
typedef double gd_m __attribute__((vector_size(GB), aligned(8)));
#if GL == 8
#define GLO(v) __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)
#define GHI(v) __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)
#else
#define GLO(v) __builtin_shufflevector(v, v, 0, 1, 2, 3)
#define GHI(v) __builtin_shufflevector(v, v, 4, 5, 6, 7)
#endif

typedef struct { gu s[4]; } glanes_t; /* lanes l0 .. l0 + GL - 1, state words 0-3 */

static inline void glanes_load(glanes_t *G, const uint64_t *st, int l0) {
    for (int w = 0; w < 4; w++) G->s[w] = *(const gu_m *)(st + w * SROW + l0);
}

static inline void glanes_store(const glanes_t *G, uint64_t *st, int l0) {
    for (int w = 0; w < 4; w++) *(gu_m *)(st + w * SROW + l0) = G->s[w];
}

static inline gu rotlg(gu x, int k) { return (x << k) | (x >> (64 - k)); }

static inline gu glanes_next(gu *s) {
    gu out = rotlg(s[0] + s[3], 23) + s[0], t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotlg(s[3], 45);
    return out;
}

static inline gd loadg(const double *p) { return *(const gd_m *)p; }
static inline void storeg(double *p, gd v) { *(gd_m *)p = v; }

/* ---- the float32 inverse CDF ------------------------------------------------------------- */

static inline gf vfma(gf a, gf b, gf c) {
#if defined(__AVX512F__)
    return (gf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__AVX2__) && defined(__FMA__)
    /* GCC leaves the element loop below as scalar fmaf calls without AVX-512 */
    return (gf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    gf r;
    for (int i = 0; i < 2 * GL; i++) r[i] = fmaf(a[i], b[i], c[i]);
    return r;
#endif
}

/* the central rational function's coefficients, broadcast once per call */
typedef struct { gf p[CDEG + 1], q[CDEG + 1]; } central_t;

static inline void central_load(central_t *C) {
    for (int j = 0; j <= CDEG; j++) { C->p[j] = (gf){0} + CP[j]; C->q[j] = (gf){0} + CQ[j]; }
}

/* u = (h >> 9) 2^-23 + 2^-24, z = sign(bit 8) u P(y)/Q(y), y = (1 - u)(1 + u) */
static inline gf central(gh h, const central_t *C) {
    /* x - 1 is exact for x in [1, 2), so x - (1 - 2^-24) rounds (x - 1) + 2^-24 as two steps
     * would: one operation fewer, the same bits */
    gf u = (gf)((h >> 9) | 0x3F800000u) - (1.0f - 0x1p-24f);
    gf y = (1.0f - u) * (1.0f + u);
    gf P = C->p[CDEG], Q = C->q[CDEG];
    for (int j = CDEG - 1; j >= 0; j--) { P = vfma(P, y, C->p[j]); Q = vfma(Q, y, C->q[j]); }
    gf r = u * (P / Q);
    return (gf)((gh)r ^ ((h << 23) & 0x80000000u));
}

/* central() of GF vectors at once, their Horner steps interleaved (the same operations on each
 * vector as central()) */
static inline __attribute__((always_inline)) void central_gf(const gh *h, const central_t *C,
                                                            gf *out) {
    gf u[GF], y[GF], P[GF], Q[GF];
    for (int g = 0; g < GF; g++) {
        u[g] = (gf)((h[g] >> 9) | 0x3F800000u) - (1.0f - 0x1p-24f);
        y[g] = (1.0f - u[g]) * (1.0f + u[g]);
        P[g] = C->p[CDEG];
        Q[g] = C->q[CDEG];
    }
    for (int j = CDEG - 1; j >= 0; j--)
        for (int g = 0; g < GF; g++) {
            P[g] = vfma(P[g], y[g], C->p[j]);
            Q[g] = vfma(Q[g], y[g], C->q[j]);
        }
    for (int g = 0; g < GF; g++) {
        gf r = u[g] * (P[g] / Q[g]);
        out[g] = (gf)((gh)r ^ ((h[g] << 23) & 0x80000000u));
    }
}

/* bit j set where half j >= H_TAIL (its normal is a tail, redone in float64) */
static inline uint32_t tail_mask(gh h) {
#if defined(__AVX512F__)
    return (uint32_t)_mm512_cmpge_epu32_mask((__m512i)h, _mm512_set1_epi32((int)H_TAIL));
#elif defined(__AVX2__)
    /* unsigned h >= t  <=>  max(h, t) == h */
    __m256i hi = (__m256i)h;
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_max_epu32(hi, _mm256_set1_epi32((int)H_TAIL)), hi)));
#else
    uint32_t m = 0;
    for (int i = 0; i < 2 * GL; i++) m |= (uint32_t)(h[i] >= H_TAIL) << i;
    return m;
#endif
}

/* sqrt(2) erfinv(u) with the sign of bit 8, float64, for the first n (at most 8) tail words:
 * normals.py's _tail_f32 word by word (the same IEEE operations; log is libm's).  Scalar: a
 * step has about one tail word, and the independent Horner chains of several words overlap
 * in the core anyway.  (An 8-wide generic vector here went through the stack in 8-byte pieces
 * on AVX2: 8 % of the step loop.) */
static void tail_values8(const uint32_t *h, double *out, int64_t n) {
    for (int64_t l = 0; l < n && l < 8; l++) {
        const double u = ((double)(h[l] >> 9) + 0.5) * 0x1p-23;
        const double y = (1.0 - u) * (1.0 + u);
        const double sig = sqrt(-log(y));
        const double t = (sig - TAIL_C) * TAIL_IH;
        double acc = 0.0;
        for (int j = NG - 1; j >= 0; j--) acc = acc * t + TG[j];
        const double v = sig * acc;
        out[l] = ((h[l] >> 8) & 1u) ? -v : v;
    }
}

#if GL == 8
/* (GCC's generic conversion goes through four ymm conversions and shuffles) */
static inline gd widen_lo(gf f) { return (gd)_mm512_cvtps_pd(_mm512_castps512_ps256((__m512)f)); }
static inline gd widen_hi(gf f) {
    return (gd)_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd((__m512)f), 1)));
}
#elif defined(__AVX__)
/* (GCC's generic conversion goes through xmm registers) */
static inline gd widen_lo(gf f) { return (gd)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)f)); }
static inline gd widen_hi(gf f) { return (gd)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)f, 1)); }
#else
static inline gd widen_lo(gf f) { return __builtin_convertvector(GLO(f), gd); }
static inline gd widen_hi(gf f) { return __builtin_convertvector(GHI(f), gd); }
#endif

/* ---- the ziggurat ------------------------------------------------------------------------ */

static inline double bits_unit52(uint64_t b) { /* (b >> 12) 2^-52, exactly */
    uint64_t v = (b >> 12) | 0x3FF0000000000000ull;
    double d;
    memcpy(&d, &v, 8);
    return d - 1.0;
}

static inline double open_unit(uint64_t *st) { /* (0, 1], 53 bits, from the repair lane */
    return (double)((next_raw(st, LANES) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* normals.py's _slow_normal: the word b failed the fast path */
static double zig_slow(uint64_t *st, uint64_t b) {
    for (;;) {
        int k = (int)(b & 0xFF);
        int neg = (int)((b >> 8) & 1);
        double u = bits_unit52(b);
        double x = u * ZX[k];
        if (u < ZRATIO[k]) return neg ? -x : x;
        if (k == 0) {
            for (;;) {
                double xx = -log(open_unit(st)) * ZINV_R;
                double yy = -log(open_unit(st));
                if (yy + yy > xx * xx) {
                    x = ZR + xx;
                    return neg ? -x : x;
                }
            }
        }
        if (ZF[k] + bits_unit52(next_raw(st, LANES)) * (ZF[k + 1] - ZF[k]) < exp(-0.5 * x * x))
            return neg ? -x : x;
        b = next_raw(st, LANES);
    }
}

/* fast path of GL words: value (b >> 12) WS[b & 0x1FF] and the mask of rejected words */
static inline gd zig_fast(gu b, uint32_t *rejected) {
    gu r = b >> 12;
#if defined(__AVX512F__)
    __m512i bi = (__m512i)b;
    __m512i ki = _mm512_i64gather_epi64(_mm512_and_si512(bi, _mm512_set1_epi64(0xFF)), ZKI, 8);
    __m512d ws = _mm512_i64gather_pd(_mm512_and_si512(bi, _mm512_set1_epi64(0x1FF)), ZWS, 8);
    *rejected = (uint32_t)_mm512_cmpge_epu64_mask((__m512i)r, ki);
    return __builtin_convertvector(r, gd) * (gd)ws;
#elif defined(__AVX2__)
    /* r < 2^52 and the thresholds too, so the signed 64-bit compare is the unsigned one, and r
     * converts exactly as the mantissa of 2^52 + r (AVX2 has no unsigned 64-bit to double
     * conversion; GCC would convert lane by lane). */
    __m256i bi = (__m256i)b, ri = (__m256i)r;
    __m256i ki = _mm256_i64gather_epi64((const long long *)ZKI,
                                        _mm256_and_si256(bi, _mm256_set1_epi64x(0xFF)), 8);
    __m256d ws = _mm256_i64gather_pd(ZWS, _mm256_and_si256(bi, _mm256_set1_epi64x(0x1FF)), 8);
    *rejected = (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(ki, ri))) ^ 0xFu;
    __m256d big = _mm256_set1_pd(0x1p52);
    __m256d rd = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(ri, _mm256_castpd_si256(big))), big);
    return (gd)_mm256_mul_pd(rd, ws);
#else
    gd ws;
    uint32_t m = 0;
    for (int l = 0; l < GL; l++) {
        ws[l] = ZWS[b[l] & 0x1FF];
        m |= (uint32_t)(r[l] >= ZKI[b[l] & 0xFF]) << l;
    }
    *rejected = m;
    return __builtin_convertvector(r, gd) * ws;
#endif
}

/* ---- drawing blocks of 32 normals ---------------------------------------------------------- */

/* The next normals of the stream for the chunks at positions a0, a0 + 32, ... < a1, scaled,
 * into z[a0 .. a1).  Chunk k's 32 words go to its record
 * recs + REC k (GEN_ZIG: 32 words, word j for position j; GEN_F32: 16 words, half j for
 * position j), and the mask of its words whose value is not final is OR'd into rec[33], which
 * the caller zeroed.  Lane l gives the chunk's halves 2l, 2l + 1 (GEN_F32) or its words l,
 * 16 + l (GEN_ZIG). */
static inline __attribute__((always_inline)) void draw_chunks(
        int gen, uint64_t *st, const central_t *C, const double *scale, double *z, int64_t a0,
        int64_t a1, uint64_t *recs) {
    /* a local copy: *C could alias the stores below, so its coefficients would be reloaded from
     * memory in every iteration even where registers are free (AVX-512) */
    const central_t Cl = *C;
    if (gen == GEN_F32) {
        for (int g0 = 0; g0 < LANES; g0 += GF * GL) {
            glanes_t G[GF];
            for (int u = 0; u < GF; u++) glanes_load(&G[u], st, g0 + u * GL);
            uint64_t *rec = recs;
            for (int64_t a = a0; a < a1; a += CHUNK, rec += REC) {
                gh h[GF];
                gf f[GF];
                for (int u = 0; u < GF; u++) {
                    gu w = glanes_next(G[u].s);
                    h[u] = (gh)w;
                    *(gu_m *)(rec + g0 + u * GL) = w;
                }
                central_gf(h, &Cl, f);
                for (int u = 0; u < GF; u++) {
                    const int l0 = g0 + u * GL;
                    const int64_t b = a + 2 * l0;
                    storeg(z + b, loadg(scale + b) * widen_lo(f[u]));
                    storeg(z + b + GL, loadg(scale + b + GL) * widen_hi(f[u]));
                    rec[33] |= (uint64_t)tail_mask(h[u]) << (2 * l0);
                }
            }
            for (int u = 0; u < GF; u++) glanes_store(&G[u], st, g0 + u * GL);
        }
        return;
    }
    for (int g0 = 0; g0 < LANES; g0 += GZ * GL) {
        glanes_t G[GZ];
        for (int u = 0; u < GZ; u++) glanes_load(&G[u], st, g0 + u * GL);
        uint64_t *rec = recs;
        for (int64_t a = a0; a < a1; a += CHUNK, rec += REC) {
            for (int u = 0; u < GZ; u++) {
                const int l0 = g0 + u * GL;
                for (int q = 0; q < 2; q++) {
                    gu w = glanes_next(G[u].s);
                    const int j = 16 * q + l0;
                    uint32_t m;
                    storeg(z + a + j, loadg(scale + a + j) * zig_fast(w, &m));
                    *(gu_m *)(rec + j) = w;
                    rec[33] |= (uint64_t)m << j;
                }
            }
        }
        for (int u = 0; u < GZ; u++) glanes_store(&G[u], st, g0 + u * GL);
    }
}

/* set up the records of the chunks at a0, a0 + 32, ... < a1 for draw_chunks; returns their number */
static inline int64_t open_records(uint64_t *recs, int64_t a0, int64_t a1) {
    int64_t k = 0;
    for (int64_t a = a0; a < a1; a += CHUNK, k++) {
        recs[REC * k + 32] = (uint64_t)a;
        recs[REC * k + 33] = 0;
    }
    return k;
}

/* The last n < 32 normals of a sample (scalar lanes: the lanes must be in st), scaled, into
 * z; returns the mask of its words that are not final (the words go to rec as for draw_chunks).  The words are those of normals.py's
 * _raw_block: one per lane in lane order (GEN_ZIG), halves of ceil(n/2) words (GEN_F32). */
static uint32_t draw_rest(int gen, uint64_t *st, const central_t *C, const double *scale,
                          double *z, int64_t n, uint64_t *rec) {
    uint32_t m = 0;
    if (gen == GEN_F32) {
        for (int l = 0; 2 * l < n; l++) rec[l] = next_raw(st, l);
        const uint32_t *h = (const uint32_t *)rec;
        for (int j = 0; j < n; j++) {
            z[j] = scale[j] * (double)central((gh){0} + h[j], C)[0];
            m |= (uint32_t)(h[j] >= H_TAIL) << j;
        }
    } else {
        for (int j = 0; j < n; j++) {
            uint64_t b = rec[j] = next_raw(st, j % LANES);
            uint64_t r = b >> 12;
            z[j] = scale[j] * ((double)r * ZWS[b & 0x1FF]);
            m |= (uint32_t)(r >= ZKI[b & 0xFF]) << j;
        }
    }
    return m;
}

/* Final values of the flagged words of nrec records, in increasing order (the ziggurat's
 * redraws consume the repair lane in that order, as in normals.py).  fix(b, v_old, v_new) is
 * called for each.  GEN_F32's tails go 8 at a time through tail_values8. */
typedef struct {
    double *J;
    const double *B;
    double *corr;
    int64_t N, K, M;
} fix_t;

static inline void fix_one(const fix_t *F, double *z, int64_t b, double v) {
    double d = v - z[b];
    z[b] = v;
    if (F) {
        for (int64_t i = 0; i < F->K; i++) F->corr[i] += F->J[i * F->N + b] * d;
        for (int64_t n = 0; n < F->M; n++) F->corr[F->K + n] += F->B[n * F->N + b] * d;
    }
}

static void redo_flagged(int gen, uint64_t *st, const uint64_t *recs, int64_t nrec,
                         const double *scale, double *z, const fix_t *F) {
    uint32_t th[40];
    int64_t tb[40];
    double tv[40];
    int64_t nq = 0;
    for (int64_t r = 0; r < nrec; r++) {
        const uint64_t *rec = recs + REC * r;
        int64_t a0 = (int64_t)rec[32];
        uint32_t m = (uint32_t)rec[33];
        while (m) {
            int j = __builtin_ctz(m);
            int64_t b = a0 + j;
            if (gen == GEN_ZIG) {
                fix_one(F, z, b, scale[b] * zig_slow(st, rec[j]));
            } else {
                th[nq] = ((const uint32_t *)rec)[j];
                tb[nq++] = b;
            }
            m &= m - 1;
        }
        if (gen == GEN_F32 && (nq >= 8 || r == nrec - 1)) {
            for (int64_t q = nq; q % 8; q++) th[q] = 0; /* padding lanes */
            for (int64_t q = 0; q < nq; q += 8) tail_values8(th + q, tv + q, nq - q);
            for (int64_t q = 0; q < nq; q++) fix_one(F, z, tb[q], scale[tb[q]] * tv[q]);
            nq = 0;
        }
    }
}

static inline __attribute__((always_inline)) void fill(const int gen, uint64_t *st,
        const double *scale, double *z, int64_t n, uint64_t *recs) {
    central_t C;
    central_load(&C);
    const int64_t full = n - n % CHUNK;
    int64_t nrec = open_records(recs, 0, full);
    draw_chunks(gen, st, &C, scale, z, 0, full, recs);
    if (full < n) {
        uint64_t *rec = recs + REC * nrec++;
        rec[32] = (uint64_t)full;
        rec[33] = draw_rest(gen, st, &C, scale + full, z + full, n - full, rec);
    }
    redo_flagged(gen, st, recs, nrec, scale, z, NULL);
}

/* z = scale * next n normals of the stream gen (the tests' reference: normals.py's fill_*) */
void sgd_fill(int gen, uint64_t *st, const double *scale, double *z, int64_t n,
              uint64_t *recs) {
    if (gen == GEN_F32)
        fill(GEN_F32, st, scale, z, n, recs);
    else
        fill(GEN_ZIG, st, scale, z, n, recs);
}

/* reps samples of n normals drawn into the same z, nothing else: the floor of a step's cost
 * (bench/bench_simulate.py) */
void sgd_draw_only(int gen, uint64_t *st, const double *scale, double *z, int64_t n,
                   int64_t reps, uint64_t *recs) {
    for (int64_t r = 0; r < reps; r++) {
        sgd_fill(gen, st, scale, z, n, recs);
        __asm__ volatile("" ::: "memory"); /* every sample is drawn and stored */
    }
}

/* z[a] = normal(h[a]) for given 32-bit words, unscaled, GEN_F32 (the exhaustive test) */
void sgd_transform_f32(const uint32_t *h, double *z, int64_t n) {
    central_t C;
    central_load(&C);
    int64_t a = 0;
    for (; a + 2 * GL <= n; a += 2 * GL) {
        gf f = central(*(const gh_m *)(h + a), &C);
        storeg(z + a, widen_lo(f));
        storeg(z + a + GL, widen_hi(f));
    }
    for (; a < n; a++) z[a] = (double)central((gh){0} + h[a], &C)[0];
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
            tail_values8(th, tv, nq);
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

/* 64-bit words of work space the Python side passes: sgd_rows needs N (the second sample
 * buffer), sgd_fill REC (n/32 + 1) (the records) */
int64_t sgd_work_size(int64_t N, int64_t K, int64_t M) {
    (void)K;
    (void)M;
    return N + REC * (N / CHUNK + 1) + 8;
}

/* ---- one step, in two halves -------------------------------------------------------------
 * The coordinates are cut at H = 32 floor(N/64): part 0 = [0, H), part 1 = [H, N) with the
 * N mod 32 remainder.  Each part's fields are summed on their own, x = (S_0 + S_1)/sqrt(N), and
 * its flagged words are redone in its own records.  With one thread the parts run one after the
 * other; with two, each thread runs one part (its own copy of the lanes skips the other part's
 * words without transforming them), so the sums, hence the trajectory, are the same bits either
 * way.  Only the part sums (and, for the ziggurat, the repair lane: part 0's redraws come first
 * in the stream) cross between the threads, once per step. */

/* a step counter one thread posts and the other waits for (wait_until) */
typedef struct {
    _Atomic int64_t v;
    _Atomic uint32_t seq;     /* futex word: changed by a post that finds sleepers */
    _Atomic int32_t sleepers;
} flag_t;

typedef struct {
    int gen, act, nth;
    int64_t N, n_tr, K, M, n_steps, H;
    double eta;
    double *J;
    const double *B, *scale;
    double *buf[2]; /* the current and the next sample, swapped each step */
    double *part[2][2];         /* [part][parity] -> K + M sums, each on its own lines */
    /* Exchange between the threads, double-buffered by the parity of the step.  Every field a
     * thread writes has a cache line of its own: a post must not evict the lines the other
     * thread reads all the time (the fields above), nor the other thread's flag. */
    _Alignas(64) flag_t posted0; /* steps whose sums (and repair lane) part 0 posted */
    _Alignas(64) flag_t posted1;
    _Alignas(64) flag_t rep0_posted; /* steps whose part-0 redraws are done (GEN_ZIG) */
    _Alignas(64) uint64_t rep0[2][4];  /* [parity] repair lane after part 0's redraws */
    _Alignas(64) uint64_t rep1[2][4];  /* ... after part 1's */
} shared_t;

typedef struct {                /* a thread's own memory (on cache lines of its own) */
    _Alignas(64) uint64_t st[4 * SROW]; /* its copy of the lanes */
    uint64_t *recs;
    v8d *acc;
    double *corr, *c, *x, *y;
} local_t;

/* Waiting for the other thread: spin for up to SPIN_LIMIT pauses (a step's exchange normally
 * takes well under a microsecond), then sleep until it posts (Linux futex; elsewhere yield the
 * core).  When the other thread has lost its core to other work, the waiting one then sleeps
 * instead of spinning through whole time slices (CPU time that bought nothing). */
#define SPIN_LIMIT 2000

static void post(flag_t *f, int64_t value) {
    atomic_store_explicit(&f->v, value, memory_order_seq_cst);
#if defined(__linux__)
    if (atomic_load_explicit(&f->sleepers, memory_order_seq_cst)) {
        atomic_fetch_add_explicit(&f->seq, 1u, memory_order_seq_cst);
        syscall(SYS_futex, &f->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
#endif
}

static void wait_until(flag_t *f, int64_t value) {
    for (int spins = 0; atomic_load_explicit(&f->v, memory_order_acquire) < value; spins++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (spins < SPIN_LIMIT) continue;
#if defined(__linux__)
        /* seq is read before announcing the sleep: a post after this read changes seq, and
         * the futex then returns at once (seq_cst orders the post's store of v before its
         * read of sleepers, and the announcement before the re-read of v here) */
        uint32_t seq = atomic_load_explicit(&f->seq, memory_order_seq_cst);
        atomic_fetch_add_explicit(&f->sleepers, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&f->v, memory_order_seq_cst) < value)
            syscall(SYS_futex, &f->seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
        atomic_fetch_sub_explicit(&f->sleepers, 1, memory_order_seq_cst);
#else
        sched_yield();
#endif
        spins = 0;
    }
}

/* advance the vector lanes through `chunks` blocks of 32 normals without using the words */
static inline void skip_chunks(int gen, uint64_t *st, int64_t chunks) {
    /* GF groups side by side: one group's state chain alone leaves the vector units idle */
    for (int g0 = 0; g0 < LANES; g0 += GF * GL) {
        glanes_t G[GF];
        for (int u = 0; u < GF; u++) glanes_load(&G[u], st, g0 + u * GL);
        for (int64_t k = 0; k < chunks * (gen == GEN_ZIG ? 2 : 1); k++)
            for (int u = 0; u < GF; u++) (void)glanes_next(G[u].s);
        for (int u = 0; u < GF; u++) glanes_store(&G[u], st, g0 + u * GL);
    }
}

/* advance the scalar lanes as draw_rest does for n normals, without using the words */
static void skip_rest(int gen, uint64_t *st, int64_t n) {
    if (gen == GEN_F32)
        for (int l = 0; 2 * l < n; l++) (void)next_raw(st, l);
    else
        for (int j = 0; j < n; j++) (void)next_raw(st, j % LANES);
}

/* One chunk of 32 coordinates: J_i += c_i z and acc_i += J_i zn, i < K.  acc_i holds 8
 * partial sums (lane l: the coordinates = l mod 8), each added in the same order on every
 * instruction-set path; the vectors are GL wide (a v8d in GCC's generic vectors went through
 * the stack on AVX2). */
static inline __attribute__((always_inline)) void update_chunk(
        double *J, int64_t N, int64_t K, const double *c, const double *z, const double *zn,
        v8d *acc) {
    for (int o = 0; o < 8; o += GL) {
        const gd w0 = loadg(zn + o), w1 = loadg(zn + 8 + o), w2 = loadg(zn + 16 + o),
                 w3 = loadg(zn + 24 + o);
        const gd z0 = loadg(z + o), z1 = loadg(z + 8 + o), z2 = loadg(z + 16 + o),
                 z3 = loadg(z + 24 + o);
        for (int64_t i = 0; i < K; i++) {
            double *Ji = J + i * N + o;
            const double ci = c[i];
            gd j0 = loadg(Ji) + ci * z0, j1 = loadg(Ji + 8) + ci * z1;
            gd j2 = loadg(Ji + 16) + ci * z2, j3 = loadg(Ji + 24) + ci * z3;
            storeg(Ji, j0); storeg(Ji + 8, j1); storeg(Ji + 16, j2); storeg(Ji + 24, j3);
            double *ai = (double *)&acc[i] + o;
            storeg(ai, loadg(ai) + ((j0 * w0 + j1 * w1) + (j2 * w2 + j3 * w3)));
        }
    }
}

/* acc_n += B_n zn over one chunk, n < M (lanes as in update_chunk) */
static inline __attribute__((always_inline)) void fields_chunk(
        const double *B, int64_t N, int64_t M, const double *zn, v8d *acc) {
    for (int o = 0; o < 8; o += GL) {
        const gd w0 = loadg(zn + o), w1 = loadg(zn + 8 + o), w2 = loadg(zn + 16 + o),
                 w3 = loadg(zn + 24 + o);
        for (int64_t n = 0; n < M; n++) {
            const double *Bn = B + n * N + o;
            double *an = (double *)&acc[n] + o;
            storeg(an, loadg(an) + ((loadg(Bn) * w0 + loadg(Bn + 8) * w1) +
                                    (loadg(Bn + 16) * w2 + loadg(Bn + 24) * w3)));
        }
    }
}

/* Part p of one step: draw its normals into zn, update its coordinates of J with z, sum its
 * fields of zn into T->acc / T->corr, record its flagged words.  With `skip`, the lanes also
 * pass over the other part's words.  Returns the number of records. */
static inline __attribute__((always_inline)) int64_t part_pass(
        const int gen, const int k2, const shared_t *S, local_t *T, const central_t *C, int p,
        int skip, const double *z, double *zn) {
    const int64_t N = S->N, n_tr = S->n_tr, K = k2 ? 2 : S->K, M = k2 ? 2 : S->M, KM = K + M;
    const int64_t lo = p ? S->H : 0, hi_chunks = p ? N - (N - S->H) % CHUNK : S->H;
    double *restrict J = S->J;
    const double *B = S->B, *scale = S->scale, *c = T->c;
    v8d *restrict acc = T->acc;
    double *corr = T->corr;
    for (int64_t r = 0; r < KM; r++) { acc[r] = (v8d){0}; corr[r] = 0.0; }
    if (skip && p == 1) skip_chunks(gen, T->st, S->H / CHUNK);
    int64_t nrec = 0, a = lo;
    /* A block's normals are drawn first (draw_chunks: the generator's lanes a group at a time),
     * then its coordinates are updated and its fields summed from zn, while zn is in L1. */
    for (int64_t a1; a < hi_chunks; a = a1) {
        a1 = a + BLOCK < hi_chunks ? a + BLOCK : hi_chunks;
        uint64_t *recs = T->recs + REC * nrec;
        nrec += open_records(recs, a, a1);
        draw_chunks(gen, T->st, C, scale, zn, a, a1, recs);
        for (int64_t b0 = a; b0 < a1; b0 += CHUNK) {
            if (b0 + CHUNK <= n_tr) {
                update_chunk(J + b0, N, K, c, z + b0, zn + b0, acc);
            } else {
                for (int64_t i = 0; i < K; i++) {
                    double *Ji = J + i * N;
                    double s = 0.0;
                    for (int64_t b = b0; b < b0 + CHUNK; b++) {
                        if (b < n_tr) Ji[b] += c[i] * z[b];
                        s += Ji[b] * zn[b];
                    }
                    corr[i] += s;
                }
            }
            fields_chunk(B + b0, N, M, zn + b0, acc + K);
        }
    }
    if (skip && p == 0) skip_chunks(gen, T->st, (N - S->H) / CHUNK);
    int64_t rest = N - (N / CHUNK) * CHUNK;
    if (p == 1 && rest) { /* the last N mod 32 coordinates */
        a = N - rest;
        uint64_t *rec = T->recs + REC * nrec++;
        rec[32] = (uint64_t)a;
        rec[33] = draw_rest(gen, T->st, C, scale + a, zn + a, rest, rec);
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
    } else if (p == 0 && skip && rest) {
        skip_rest(gen, T->st, rest);
    }
    return nrec;
}

/* the part's sums after its flagged words are final */
static inline void part_sums(const shared_t *S, local_t *T, double *out) {
    for (int64_t r = 0; r < S->K + S->M; r++) out[r] = hsum8(T->acc[r]) + T->corr[r];
}

/* the error signal's coefficients c_i from the fields; 0 if a field is not finite */
static inline int coefficients(const shared_t *S, local_t *T) {
    const int64_t K = S->K, M = S->M;
    const double sqM = sqrt((double)M);
    const double coef = S->eta * (sqM / K) / sqrt((double)S->N);
    double sig = 0.0, zeta = 0.0;
    for (int64_t i = 0; i < K; i++) {
        if (!isfinite(T->x[i])) return 0;
        sig += g_act(S->act, T->x[i]);
    }
    for (int64_t n = 0; n < M; n++) zeta += g_act(S->act, T->y[n]);
    double delta = zeta / sqM - sig * (sqM / K);
    if (!isfinite(delta)) return 0;
    for (int64_t i = 0; i < K; i++) T->c[i] = coef * delta * gprime_act(S->act, T->x[i]);
    return 1;
}

static inline void new_fields(const shared_t *S, local_t *T, const double *s0, const double *s1) {
    const double isq = 1.0 / sqrt((double)S->N);
    for (int64_t i = 0; i < S->K; i++) T->x[i] = (s0[i] + s1[i]) * isq;
    for (int64_t n = 0; n < S->M; n++) T->y[n] = (s0[S->K + n] + s1[S->K + n]) * isq;
}

static inline void fix_part(const int gen, const shared_t *S, local_t *T, int64_t nrec, double *zn) {
    fix_t F = {S->J, S->B, T->corr, S->N, S->K, S->M};
    redo_flagged(gen, T->st, T->recs, nrec, S->scale, zn, &F);
}

/* One thread doing both parts.  Returns -1 or the failing step. */
static inline __attribute__((always_inline)) int64_t run_serial(const int gen, const int k2,
                                                                 shared_t *S, local_t *T) {
    central_t C;
    central_load(&C);
    double *s0 = S->part[0][0], *s1 = S->part[1][0];
    for (int64_t t = 0; t < S->n_steps; t++) {
        if (!coefficients(S, T)) return t;
        const double *z = S->buf[t & 1];
        double *zn = S->buf[(t + 1) & 1];
        int64_t nrec = part_pass(gen, k2, S, T, &C, 0, 0, z, zn);
        fix_part(gen, S, T, nrec, zn);
        part_sums(S, T, s0);
        nrec = part_pass(gen, k2, S, T, &C, 1, 0, z, zn);
        fix_part(gen, S, T, nrec, zn);
        part_sums(S, T, s1);
        new_fields(S, T, s0, s1);
    }
    return -1;
}

/* Thread p of two.  Returns -1 or the failing step (both threads find the same one). */
static inline __attribute__((always_inline)) int64_t run_part(const int gen, const int k2,
                                                               shared_t *S, local_t *T, int p) {
    central_t C;
    central_load(&C);
    const int q = 1 - p;
    for (int64_t t = 0; t < S->n_steps; t++) {
        if (!coefficients(S, T)) return t;
        const int par = (int)(t & 1);
        const double *z = S->buf[par];
        double *zn = S->buf[1 - par];
        int64_t nrec = part_pass(gen, k2, S, T, &C, p, 1, z, zn);
        if (gen == GEN_ZIG && p == 1) { /* part 0's redraws come first from the repair lane */
            wait_until(&S->rep0_posted, t + 1);
            for (int w = 0; w < 4; w++) T->st[w * SROW + LANES] = S->rep0[par][w];
        }
        fix_part(gen, S, T, nrec, zn);
        if (gen == GEN_ZIG) {
            uint64_t *rep = p ? S->rep1[par] : S->rep0[par];
            for (int w = 0; w < 4; w++) rep[w] = T->st[w * SROW + LANES];
            if (p == 0) post(&S->rep0_posted, t + 1);
        }
        part_sums(S, T, S->part[p][par]);
        post(p ? &S->posted1 : &S->posted0, t + 1);
        wait_until(q ? &S->posted1 : &S->posted0, t + 1);
        if (gen == GEN_ZIG && p == 0) /* the repair lane after part 1's redraws */
            for (int w = 0; w < 4; w++) T->st[w * SROW + LANES] = S->rep1[par][w];
        new_fields(S, T, S->part[0][par], S->part[1][par]);
    }
    return -1;
}

/* run_serial / run_part compiled for each generator, and for K = M = 2 (the defaults: the
 * row loops unrolled, the partial sums kept in registers through a block) */
static int64_t run_serial_any(shared_t *S, local_t *T) {
    const int k2 = S->K == 2 && S->M == 2;
    if (S->gen == GEN_F32) return k2 ? run_serial(GEN_F32, 1, S, T) : run_serial(GEN_F32, 0, S, T);
    return k2 ? run_serial(GEN_ZIG, 1, S, T) : run_serial(GEN_ZIG, 0, S, T);
}

static int64_t run_part_any(shared_t *S, local_t *T, int p) {
    const int k2 = S->K == 2 && S->M == 2;
    if (S->gen == GEN_F32) return k2 ? run_part(GEN_F32, 1, S, T, p) : run_part(GEN_F32, 0, S, T, p);
    return k2 ? run_part(GEN_ZIG, 1, S, T, p) : run_part(GEN_ZIG, 0, S, T, p);
}

typedef struct {
    shared_t *S;
    local_t *T;
    int64_t result;
    double cpu_s; /* the thread's CPU time */
} job_t;

static double thread_cpu_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *part1_thread(void *arg) {
    job_t *jb = (job_t *)arg;
    double c0 = thread_cpu_s();
    jb->result = run_part_any(jb->S, jb->T, 1);
    jb->cpu_s = thread_cpu_s() - c0;
    return NULL;
}

static void local_free(local_t *T) {
    free(T->recs);
    free(T->acc);
    free(T->corr);
}

static int local_init(local_t *T, const shared_t *S, const uint64_t *st, const double *x,
                      const double *y) {
    const int64_t KM = S->K + S->M;
    memcpy(T->st, st, sizeof T->st);
    T->recs = malloc(sizeof(uint64_t) * (size_t)(REC * (S->N / CHUNK + 2)));
    T->acc = aligned_alloc(64, sizeof(v8d) * (size_t)KM);
    T->corr = malloc(sizeof(double) * (size_t)(2 * KM + S->K + 8)); /* corr, x, y, c */
    if (!T->recs || !T->acc || !T->corr) {
        local_free(T);
        return -1;
    }
    T->x = T->corr + KM;
    T->y = T->x + S->K;
    T->c = T->y + S->M;
    memcpy(T->x, x, sizeof(double) * (size_t)S->K);
    memcpy(T->y, y, sizeof(double) * (size_t)S->M);
    return 0;
}

/* n_steps SGD steps on stream gen, weights in row layout J (K, N), B (M, N), with 1 or 2
 * threads (the same bits either way).  On entry z, x, y hold the current sample and its
 * fields, on exit the next ones; work holds >= N doubles (the other sample buffer).  Only
 * coordinates a < n_tr are updated.  *helper_cpu_s gets the second thread's CPU time (a
 * second thread that cannot be started is done without).  Returns -1, the step t at which a
 * field was not finite, or -2 if the work space could not be allocated. */
int64_t sgd_rows(int gen, int nthreads, uint64_t *st, double *J, const double *B,
                 const double *scale, int64_t N, int64_t n_tr, int64_t K, int64_t M, double eta,
                 int act, int64_t n_steps, double *z, double *x, double *y, double *work,
                 double *helper_cpu_s) {
    *helper_cpu_s = 0.0;
    shared_t *S = aligned_alloc(64, (sizeof(shared_t) + 63) / 64 * 64);
    if (!S) return -2;
    memset(S, 0, sizeof *S);
    S->gen = gen; S->act = act; S->nth = nthreads == 2 ? 2 : 1;
    S->N = N; S->n_tr = n_tr; S->K = K; S->M = M; S->n_steps = n_steps; S->eta = eta;
    S->H = CHUNK * (N / (2 * CHUNK));
    S->J = J; S->B = B; S->scale = scale;
    S->buf[0] = z; S->buf[1] = work;
    const int64_t KM = K + M, stride = (KM + 7) / 8 * 8; /* separate cache lines */
    double *parts = aligned_alloc(64, sizeof(double) * (size_t)(4 * stride));
    local_t *T = aligned_alloc(64, 2 * ((sizeof(local_t) + 63) / 64 * 64));
    int64_t result = -2;
    if (T) memset(T, 0, 2 * ((sizeof(local_t) + 63) / 64 * 64));
    if (!parts || !T || local_init(&T[0], S, st, x, y)) goto done;
    for (int p = 0; p < 2; p++)
        for (int par = 0; par < 2; par++) S->part[p][par] = parts + (2 * p + par) * stride;
    if (S->nth == 1) {
        result = run_serial_any(S, &T[0]);
    } else {
        if (local_init(&T[1], S, st, x, y)) goto done;
        pthread_t th;
        job_t jb = {S, &T[1], -1, 0.0};
        if (pthread_create(&th, NULL, part1_thread, &jb)) {
            /* no second thread to be had: one thread gives the same bits */
            result = run_serial_any(S, &T[0]);
        } else {
            result = run_part_any(S, &T[0], 0);
            pthread_join(th, NULL);
            *helper_cpu_s = jb.cpu_s;
            if (jb.result != result) result = -2; /* cannot happen: both see the same fields */
        }
    }
    /* where the current sample is and what the fields are after the last completed step */
    int64_t steps_done = result >= 0 ? result : n_steps;
    if (result >= -1) {
        if (steps_done & 1) memcpy(z, work, (size_t)N * sizeof(double));
        memcpy(x, T[0].x, sizeof(double) * (size_t)K);
        memcpy(y, T[0].y, sizeof(double) * (size_t)M);
        memcpy(st, T[0].st, sizeof T[0].st);
    }
done:
    if (T) {
        local_free(&T[0]);
        local_free(&T[1]);
    }
    free(T);
    free(parts);
    free(S);
    return result;
}
