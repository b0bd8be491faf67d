/* Online SGD of the soft committee machine (row layout) on the xoshiro input streams, one pass
 * over the coordinates per step.
 *
 * Built and loaded by solvers/sim/ckernel.py (cc -O3 -march=native -ffp-contract=off); the
 * numba kernels (solvers/sim/kernels.py) compute the same thing and stay the fallback and the
 * kernel of the column layout and of NumPy's stream.
 *
 * Why C: at N = 1024, K = M = 2 a step costs about a nanosecond per coordinate, so what
 * matters is how often each coordinate is touched.  A step is one pass over the coordinates
 * (the rows of J updated with the current sample, then, while they are in cache, both fields
 * of the next sample summed) and the draw of a later sample, whole and final, into a ring of
 * sample buffers (NBUF).  The draw runs the generator's lanes in groups of a vector register
 * (GL below), the float32 transforms of several groups interleaved (GF).  The command that runs
 * it does not start numba (about 0.9 s of fixed cost).  Two threads split each sample by the
 * lanes that draw it (see "two threads" below).
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
 * tail) is listed and redone before the sample is used.  The fields are the same sums as the
 * numba kernel's in another order: trajectories agree to rounding, not bitwise.
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
#define CHUNK 32         /* normals per chunk: one 64-bit word from each lane, two halves */

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
 * register) with AVX-512, 4 (a ymm register) otherwise; a part of a sample (below: lanes
 * 8p .. 8p + 7) is NGP groups. */
#if defined(__AVX512F__)
#define GL 8
#else
#define GL 4
#endif
#define GB (8 * GL) /* bytes in a vector of GL 64-bit words */
#define NGP (8 / GL)
/* The float32 transform of GF vectors runs its Horner steps interleaved (central_gf): one
 * vector's two chains of 7 dependent fused multiply-adds leave the FMA units idle.  They are
 * CU consecutive chunks of a part's NGP groups: 2 vectors with AVX-512, 4 on AVX2 (although
 * the four no longer fit the 16 registers beside the transform and go through the stack, which
 * costs less than the idle units: the draw alone 1.2x faster than one vector at a time,
 * measured on the AVX2 build on an AVX-512 EPYC). */
#define CU 2
#define GF (NGP * CU)
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

/* ---- a sample in two parts ----------------------------------------------------------------
 * A sample's coordinates are cut in two parts by the lanes that draw them: part p is what lanes
 * 8p .. 8p + 7 give.  In each chunk of 32 coordinates that is positions 16p .. 16p + 15 for
 * GEN_F32 (lane l gives halves 2l, 2l + 1) and 8p .. 8p + 7, 16 + 8p .. 16 + 8p + 7 for GEN_ZIG
 * (lane l gives words l and 16 + l); in the last N mod 32 coordinates the same rule.  So a part
 * is drawn from lanes of its own, without passing over the other part's words, and it is two
 * runs of 8 coordinates in each chunk: a cache line each, when the array starts on one
 * (ckernel.aligned). */

/* offset in a chunk of run v (0, 1) of part p */
static inline int64_t part_off(int gen, int p, int v) {
    return gen == GEN_F32 ? 16 * p + 8 * v : 8 * p + 16 * v;
}

static inline int in_part(int gen, int p, int64_t j) { /* j: position in its chunk */
    return (gen == GEN_F32 ? j >= 16 : (j & 15) >= 8) == p;
}

/* The words of a part whose normal is not final after the vector pass (GEN_F32: a tail half,
 * GEN_ZIG: a rejected word), in increasing position.  GEN_ZIG first stores every word of the
 * part at its position in wmap and the chunk's mask of rejected ones in mask (no branch per
 * vector), then lists them.  On a cache line of its own: the thread that draws the part writes
 * n. */
typedef struct {
    _Alignas(64) uint32_t *pos;
    uint64_t *word;
    int64_t n;
    uint64_t *wmap;
    uint32_t *mask;
} flagged_t;

static inline void flag(flagged_t *F, int64_t b, uint64_t w) {
    F->pos[F->n] = (uint32_t)b;
    F->word[F->n++] = w;
}

/* The last N mod 32 coordinates of part p, scalar: the words of normals.py's _raw_block, one
 * per lane in lane order (GEN_ZIG), halves of ceil(n/2) words (GEN_F32). */
static inline void draw_rest(const int gen, const int p, uint64_t *st, const central_t *C,
                             const double *scale, double *z, int64_t N, flagged_t *F) {
    const int64_t a = N / CHUNK * CHUNK, rest = N - a;
    const int l0p = 8 * p;
    if (gen == GEN_F32) {
        for (int l = l0p; l < l0p + 8 && 2 * l < rest; l++) {
            const uint64_t w = next_raw(st, l);
            for (int e = 0; e < 2 && 2 * l + e < rest; e++) {
                const uint32_t h = (uint32_t)(w >> (32 * e));
                const int64_t b = a + 2 * l + e;
                z[b] = scale[b] * (double)central((gh){0} + h, C)[0];
                if (h >= H_TAIL) flag(F, b, h);
            }
        }
    } else {
        uint32_t m = 0;
        for (int64_t j = 0; j < rest; j++) {
            if (!in_part(GEN_ZIG, p, j)) continue;
            const uint64_t w = next_raw(st, (int)(j % LANES)), r = w >> 12;
            const int64_t b = a + j;
            z[b] = scale[b] * ((double)r * ZWS[w & 0x1FF]);
            F->wmap[b] = w;
            m |= (uint32_t)(r >= ZKI[w & 0xFF]) << j;
        }
        F->mask[a / CHUNK] = m;
    }
}

/* Parts p0 .. p0 + np - 1 of the next sample of the stream: their normals, scaled, into z
 * (the other part's coordinates are not touched), part p's flagged words into F[p - p0], their
 * lanes advanced in st.  GEN_F32, a part at a time: CU consecutive chunks of the part's NGP
 * lane groups are transformed side by side (central_gf).  GEN_ZIG, whose transform is short:
 * the lane groups of all the parts side by side (on AVX-512 one part is a single group, and the
 * kernel before this one drew two groups side by side there, bench/ARCHIVE.md §46). */
static inline __attribute__((always_inline)) void draw_parts(
        const int gen, const int p0, const int np, uint64_t *st, const central_t *C,
        const double *scale, double *z, int64_t N, flagged_t *F) {
    /* a local copy: *C could alias the stores below, so its coefficients would be reloaded from
     * memory in every iteration even where registers are free (AVX-512) */
    const central_t Cl = *C;
    const int64_t nch = N / CHUNK;
    for (int pp = 0; pp < np; pp++) F[pp].n = 0;
    if (gen == GEN_F32) {
        for (int pp = 0; pp < np; pp++) {
            const int l0p = 8 * (p0 + pp);
            flagged_t *Fp = &F[pp];
            glanes_t G[NGP];
            for (int g = 0; g < NGP; g++) glanes_load(&G[g], st, l0p + g * GL);
            int64_t k = 0;
            for (; k + CU <= nch; k += CU) {
                gh h[GF];
                gf f[GF];
                for (int cu = 0; cu < CU; cu++)
                    for (int g = 0; g < NGP; g++) h[cu * NGP + g] = (gh)glanes_next(G[g].s);
                central_gf(h, &Cl, f);
                for (int cu = 0; cu < CU; cu++)
                    for (int g = 0; g < NGP; g++) {
                        const int64_t b = (k + cu) * CHUNK + 2 * (l0p + g * GL);
                        const gf fv = f[cu * NGP + g];
                        const gh hv = h[cu * NGP + g];
                        storeg(z + b, loadg(scale + b) * widen_lo(fv));
                        storeg(z + b + GL, loadg(scale + b + GL) * widen_hi(fv));
                        for (uint32_t m = tail_mask(hv); m; m &= m - 1) {
                            const int j = __builtin_ctz(m);
                            flag(Fp, b + j, hv[j]);
                        }
                    }
            }
            for (; k < nch; k++) /* an odd last chunk */
                for (int g = 0; g < NGP; g++) {
                    const gh hv = (gh)glanes_next(G[g].s);
                    const gf fv = central(hv, &Cl);
                    const int64_t b = k * CHUNK + 2 * (l0p + g * GL);
                    storeg(z + b, loadg(scale + b) * widen_lo(fv));
                    storeg(z + b + GL, loadg(scale + b + GL) * widen_hi(fv));
                    for (uint32_t m = tail_mask(hv); m; m &= m - 1) {
                        const int j = __builtin_ctz(m);
                        flag(Fp, b + j, hv[j]);
                    }
                }
            for (int g = 0; g < NGP; g++) glanes_store(&G[g], st, l0p + g * GL);
        }
    } else {
        glanes_t G[2 * NGP];
        for (int pp = 0; pp < np; pp++)
            for (int g = 0; g < NGP; g++) glanes_load(&G[pp * NGP + g], st, 8 * (p0 + pp) + g * GL);
        for (int64_t k = 0; k < nch; k++) {
            uint32_t mk[2] = {0, 0};
            for (int q = 0; q < 2; q++)
                for (int pp = 0; pp < np; pp++)
                    for (int g = 0; g < NGP; g++) {
                        const gu w = glanes_next(G[pp * NGP + g].s);
                        const int64_t b = k * CHUNK + 16 * q + 8 * (p0 + pp) + g * GL;
                        uint32_t m;
                        storeg(z + b, loadg(scale + b) * zig_fast(w, &m));
                        *(gu_m *)(F[pp].wmap + b) = w;
                        mk[pp] |= m << (b - k * CHUNK);
                    }
            for (int pp = 0; pp < np; pp++) F[pp].mask[k] = mk[pp];
        }
        for (int pp = 0; pp < np; pp++)
            for (int g = 0; g < NGP; g++) glanes_store(&G[pp * NGP + g], st, 8 * (p0 + pp) + g * GL);
    }
    for (int pp = 0; pp < np; pp++) {
        draw_rest(gen, p0 + pp, st, &Cl, scale, z, N, &F[pp]);
        if (gen == GEN_ZIG) /* the list, in increasing position */
            for (int64_t k = 0; k <= nch; k++)
                for (uint32_t m = F[pp].mask[k]; m; m &= m - 1) {
                    const int64_t b = k * CHUNK + __builtin_ctz(m);
                    flag(&F[pp], b, F[pp].wmap[b]);
                }
    }
}

/* GEN_F32: the part's tail words in float64 (their halves are independent of everything else) */
static void finish_f32(const flagged_t *F, const double *scale, double *z) {
    uint32_t th[8];
    double tv[8];
    for (int64_t q = 0; q < F->n; q += 8) {
        const int64_t m = F->n - q < 8 ? F->n - q : 8;
        for (int64_t i = 0; i < m; i++) th[i] = (uint32_t)F->word[q + i];
        tail_values8(th, tv, m);
        for (int64_t i = 0; i < m; i++) z[F->pos[q + i]] = scale[F->pos[q + i]] * tv[i];
    }
}

/* GEN_ZIG: the rejected words of both parts of a sample, redrawn in increasing position from
 * the repair lane of st (normals.py: after the whole sample's fast pass) */
static void finish_zig(uint64_t *st, const flagged_t *F0, const flagged_t *F1,
                       const double *scale, double *z) {
    int64_t i = 0, j = 0;
    while (i < F0->n || j < F1->n) {
        const int first = j >= F1->n || (i < F0->n && F0->pos[i] < F1->pos[j]);
        const int64_t b = first ? F0->pos[i] : F1->pos[j];
        const uint64_t w = first ? F0->word[i++] : F1->word[j++];
        z[b] = scale[b] * zig_slow(st, w);
    }
}

/* flagged-word lists of a part: at most its coordinates */
static inline int64_t flag_cap(int64_t N) { return N / 2 + 32; }

/* 64-bit words of a part's flagged_t arrays (each starting on a cache line): wmap (N), list
 * words, list positions, masks */
static inline int64_t line_up(int64_t words) { return (words + 7) / 8 * 8; }
static inline int64_t flag_words(int64_t N) {
    return line_up(N) + line_up(flag_cap(N)) + line_up(flag_cap(N) / 2 + 1) +
           line_up(N / CHUNK / 2 + 1);
}

/* the arrays of F[0 .. count) laid out in work (64-byte aligned) */
static void flags_in(flagged_t *F, int count, uint64_t *work, int64_t N) {
    for (int i = 0; i < count; i++) {
        uint64_t *w = work + i * flag_words(N);
        F[i].wmap = w;
        F[i].word = w + line_up(N);
        F[i].pos = (uint32_t *)(F[i].word + line_up(flag_cap(N)));
        F[i].mask = (uint32_t *)((uint64_t *)F[i].pos + line_up(flag_cap(N) / 2 + 1));
        F[i].n = 0;
    }
}

static inline __attribute__((always_inline)) void fill(const int gen, uint64_t *st,
        const double *scale, double *z, int64_t n, uint64_t *work) {
    central_t C;
    central_load(&C);
    flagged_t F[2];
    flags_in(F, 2, work, n);
    draw_parts(gen, 0, 2, st, &C, scale, z, n, F);
    if (gen == GEN_F32) {
        finish_f32(&F[0], scale, z);
        finish_f32(&F[1], scale, z);
    } else {
        finish_zig(st, &F[0], &F[1], scale, z);
    }
}

/* z = scale * next n normals of the stream gen (the tests' reference: normals.py's fill_*);
 * work: sgd_work_size(n, 0, 0) words */
void sgd_fill(int gen, uint64_t *st, const double *scale, double *z, int64_t n,
              uint64_t *work) {
    if (gen == GEN_F32)
        fill(GEN_F32, st, scale, z, n, work);
    else
        fill(GEN_ZIG, st, scale, z, n, work);
}

/* reps samples of n normals drawn into the same z, nothing else: the floor of a step's cost
 * (bench/bench_simulate.py) */
void sgd_draw_only(int gen, uint64_t *st, const double *scale, double *z, int64_t n,
                   int64_t reps, uint64_t *work) {
    for (int64_t r = 0; r < reps; r++) {
        sgd_fill(gen, st, scale, z, n, work);
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

#define NBUF 4 /* sample buffers: the step's two samples and up to two drawn ahead */

static inline int64_t buf_stride(int64_t N) { return line_up(N); } /* whole cache lines */

/* 64-bit words of work space the Python side passes (64-byte aligned): sgd_rows needs the
 * sample buffers 1 .. NBUF - 1 and NBUF x 2 flagged-word lists, sgd_fill two lists */
int64_t sgd_work_size(int64_t N, int64_t K, int64_t M) {
    (void)K;
    (void)M;
    return (NBUF - 1) * buf_stride(N) + 2 * NBUF * flag_words(N) + 8;
}

/* One part of a step's pass: J_i += c_i z at the part's trainable coordinates (a < n_tr), then
 * the part's sums out_r = sum_a J_r[a] zn[a] over its coordinates, for the K rows of J (after
 * the update) and the M rows of B.  Each sum is kept in 8 partial sums (lane l: the part's
 * coordinates at chunk offsets = l mod 8, both runs added first), added in the same order on
 * every instruction-set path (vectors of GL lanes), then the last N mod 32 coordinates
 * scalar.  The step's field is (S_0 + S_1) / sqrt(N), whether one thread sums both parts or
 * each thread one. */
typedef struct {
    int gen, act, nth, la;
    int64_t N, n_tr, K, M, n_steps;
    double eta;
    double *J;
    const double *B, *scale;
    double *buf[NBUF];         /* sample s in buf[s % NBUF] (sample 0: the caller's z) */
    flagged_t fl[NBUF][2];     /* [sample % NBUF][part] */
    _Alignas(64) double *box[2][2];         /* [part][step parity]: the step counter, then its K + M sums */
    struct sleep_s *box_sleep[2];
    _Atomic int64_t *recorded, *repaired; /* GEN_ZIG on two threads (run below) */
    struct sleep_s *recorded_sleep, *repaired_sleep;
} shared_t;

typedef struct {                /* a thread's own memory (on cache lines of its own) */
    _Alignas(64) uint64_t st[4 * SROW]; /* its copy of the lanes */
    v8d *acc;
    double *corr, *s0, *s1, *c, *x, *y;
} local_t;

static inline __attribute__((always_inline)) void update_sums_chunk(
        double *J, int64_t N, int64_t K, const double *c, const double *z, const double *zn,
        int64_t o1, int64_t o2, v8d *acc) {
    for (int o = 0; o < 8; o += GL) {
        const gd w1 = loadg(zn + o1 + o), w2 = loadg(zn + o2 + o);
        const gd z1 = loadg(z + o1 + o), z2 = loadg(z + o2 + o);
        for (int64_t i = 0; i < K; i++) {
            double *Ji = J + i * N;
            const double ci = c[i];
            const gd j1 = loadg(Ji + o1 + o) + ci * z1, j2 = loadg(Ji + o2 + o) + ci * z2;
            storeg(Ji + o1 + o, j1);
            storeg(Ji + o2 + o, j2);
            double *ai = (double *)&acc[i] + o;
            storeg(ai, loadg(ai) + (j1 * w1 + j2 * w2));
        }
    }
}

static inline __attribute__((always_inline)) void sums_chunk(
        const double *R, int64_t N, int64_t nrows, const double *zn, int64_t o1, int64_t o2,
        v8d *acc) {
    for (int o = 0; o < 8; o += GL) {
        const gd w1 = loadg(zn + o1 + o), w2 = loadg(zn + o2 + o);
        for (int64_t r = 0; r < nrows; r++) {
            const double *Rr = R + r * N;
            double *ar = (double *)&acc[r] + o;
            storeg(ar, loadg(ar) + (loadg(Rr + o1 + o) * w1 + loadg(Rr + o2 + o) * w2));
        }
    }
}

static inline __attribute__((always_inline)) void pass_part(
        const int gen, const int k2, const int p, const shared_t *S, local_t *T, const double *z,
        const double *zn, double *out) {
    const int64_t N = S->N, n_tr = S->n_tr, K = k2 ? 2 : S->K, M = k2 ? 2 : S->M, KM = K + M;
    const int64_t nch = N / CHUNK, o1 = part_off(gen, p, 0), o2 = part_off(gen, p, 1);
    double *restrict J = S->J;
    const double *restrict B = S->B;
    const double *c = T->c;
    v8d acc4[4]; /* K = M = 2: in registers */
    v8d *restrict acc = k2 ? acc4 : T->acc;
    double *corr = T->corr;
    for (int64_t r = 0; r < KM; r++) {
        acc[r] = (v8d){0};
        corr[r] = 0.0;
    }
    for (int64_t k = 0; k < nch; k++) {
        const int64_t a = k * CHUNK;
        if (a + CHUNK <= n_tr) {
            update_sums_chunk(J + a, N, K, c, z + a, zn + a, o1, o2, acc);
        } else { /* not or partly trainable */
            for (int64_t i = 0; i < K; i++)
                for (int v = 0; v < 2; v++)
                    for (int64_t b = a + part_off(gen, p, v); b < a + part_off(gen, p, v) + 8 && b < n_tr; b++)
                        J[i * N + b] += c[i] * z[b];
            sums_chunk(J + a, N, K, zn + a, o1, o2, acc);
        }
        sums_chunk(B + a, N, M, zn + a, o1, o2, acc + K);
    }
    for (int64_t a = nch * CHUNK, b = a; b < N; b++) {
        if (!in_part(gen, p, b - a)) continue;
        for (int64_t i = 0; i < K; i++) {
            if (b < n_tr) J[i * N + b] += c[i] * z[b];
            corr[i] += J[i * N + b] * zn[b];
        }
        for (int64_t n = 0; n < M; n++) corr[K + n] += B[n * N + b] * zn[b];
    }
    for (int64_t r = 0; r < KM; r++) out[r] = hsum8(acc[r]) + corr[r];
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

/* ---- two threads -------------------------------------------------------------------------
 * Thread p does part p of every step: its pass, then it posts its sums and draws its part of a
 * later sample while the other thread's sums are on their way; then it reads them.  The
 * draws do not depend on the weights, so they can run ahead of the steps; the sample a step
 * sums its fields over was drawn (and finished) a step or two before.  Per step one cache line
 * crosses in each direction (a step counter beside the part's sums), nothing else: each part's
 * coordinates, lanes and flagged words stay with its thread.  The ziggurat's rejected words
 * are redrawn from the one repair lane in increasing position across both parts, so thread 0
 * does them for the whole sample (one step after the draw, from the list thread 1 posts; the
 * draws then run two samples ahead).  One thread does the same in one loop: the same
 * operations on the same values, so the same bits. */

/* Waiting for the other thread: spin for up to SPIN_LIMIT pauses (normally the other part is
 * posted within a step), then sleep until it posts (Linux futex; elsewhere yield the core).
 * When the other thread has lost its core to other work, the waiting one then sleeps instead
 * of spinning through whole time slices.  The post's store is ordered before its look for
 * sleepers (seq_cst): with a release store a post could miss a thread going to sleep in that
 * instant. */
#define SPIN_LIMIT 2000

struct sleep_s {
    _Atomic uint32_t seq; /* futex word: changed by a post that finds sleepers */
    _Atomic int32_t sleepers;
};

static inline void post(_Atomic int64_t *v, struct sleep_s *sl, int64_t value) {
    atomic_store_explicit(v, value, memory_order_seq_cst);
#if defined(__linux__)
    if (atomic_load_explicit(&sl->sleepers, memory_order_seq_cst)) {
        atomic_fetch_add_explicit(&sl->seq, 1u, memory_order_seq_cst);
        syscall(SYS_futex, &sl->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
#else
    (void)sl;
#endif
}

static void wait_until(_Atomic int64_t *v, struct sleep_s *sl, int64_t value) {
    for (int spins = 0; atomic_load_explicit(v, memory_order_acquire) < value; spins++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (spins < SPIN_LIMIT) continue;
#if defined(__linux__)
        /* seq is read before announcing the sleep: a post after this read changes seq, and
         * the futex then returns at once (seq_cst orders the post's store of v before its
         * read of sleepers, and the announcement before the re-read of v here) */
        uint32_t seq = atomic_load_explicit(&sl->seq, memory_order_seq_cst);
        atomic_fetch_add_explicit(&sl->sleepers, 1, memory_order_seq_cst);
        if (atomic_load_explicit(v, memory_order_seq_cst) < value)
            syscall(SYS_futex, &sl->seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
        atomic_fetch_sub_explicit(&sl->sleepers, 1, memory_order_seq_cst);
#else
        (void)sl;
        sched_yield();
#endif
        spins = 0;
    }
}

/* Draw sample s (the parts of this thread) and finish what this thread finishes. */
static inline __attribute__((always_inline)) void draw_sample(
        const int gen, const int two, shared_t *S, local_t *T, const central_t *C, int p,
        int64_t s) {
    double *zs = S->buf[s % NBUF];
    flagged_t *F = S->fl[s % NBUF];
    const int p0 = two ? p : 0, np = two ? 1 : 2;
    draw_parts(gen, p0, np, T->st, C, S->scale, zs, S->N, &F[p0]);
    if (gen == GEN_F32)
        for (int q = p0; q < p0 + np; q++) finish_f32(&F[q], S->scale, zs);
    if (gen == GEN_ZIG) {
        if (!two) finish_zig(T->st, &F[0], &F[1], S->scale, zs);
        else if (p == 1) post(S->recorded, S->recorded_sleep, s);
    }
}

/* GEN_ZIG on two threads, thread 0: the redraws of sample s, once thread 1 has posted its part */
static inline void repair_sample(shared_t *S, local_t *T, int64_t s) {
    wait_until(S->recorded, S->recorded_sleep, s);
    flagged_t *F = S->fl[s % NBUF];
    finish_zig(T->st, &F[0], &F[1], S->scale, S->buf[s % NBUF]);
    post(S->repaired, S->repaired_sleep, s);
}

/* The steps of thread p (nth = 2) or of the one thread (nth = 1, p = 0).  Step t updates J with
 * sample t and sums the fields of sample t + 1; sample t + 1 + la is drawn during step t (the
 * last one drawn is sample n_steps).  Returns -1 or the step whose fields were not finite
 * (both threads find the same one: they compute the same fields). */
static inline __attribute__((always_inline)) int64_t run(const int gen, const int k2,
                                                          const int two, shared_t *S,
                                                          local_t *T, int p) {
    central_t C;
    central_load(&C);
    const int64_t n = S->n_steps, la = S->la, KM = S->K + S->M;
    const int q = 1 - p;
    const int zig2 = gen == GEN_ZIG && two;
    for (int64_t s = 1; s <= la && s <= n; s++) draw_sample(gen, two, S, T, &C, p, s);
    if (zig2 && p == 0)
        for (int64_t s = 1; s < la && s <= n; s++) repair_sample(S, T, s);
    for (int64_t t = 0; t < n; t++) {
        if (!coefficients(S, T)) return t;
        const int par = (int)(t & 1);
        const double *z = S->buf[t % NBUF], *zn = S->buf[(t + 1) % NBUF];
        double *mine = two ? S->box[p][par] : NULL;
        if (two) __builtin_prefetch(mine, 1); /* own the line before the post */
        if (zig2 && p == 1) wait_until(S->repaired, S->repaired_sleep, t + 1);
        if (two) {
            pass_part(gen, k2, p, S, T, z, zn, mine + 1);
            post((_Atomic int64_t *)mine, S->box_sleep[p], t + 1);
        } else {
            pass_part(gen, k2, 0, S, T, z, zn, T->s0);
            pass_part(gen, k2, 1, S, T, z, zn, T->s1);
        }
        if (t + 1 + la <= n) draw_sample(gen, two, S, T, &C, p, t + 1 + la);
        if (zig2 && p == 0 && t + la <= n) repair_sample(S, T, t + la);
        if (two) {
            double *theirs = S->box[q][par];
            wait_until((_Atomic int64_t *)theirs, S->box_sleep[q], t + 1);
            for (int64_t r = 0; r < KM; r++) (p ? T->s0 : T->s1)[r] = theirs[1 + r];
            for (int64_t r = 0; r < KM; r++) (p ? T->s1 : T->s0)[r] = mine[1 + r];
        }
        new_fields(S, T, T->s0, T->s1);
    }
    return -1;
}

/* run compiled for each generator, for one and two threads, and for K = M = 2 (the defaults:
 * the row loops unrolled, the partial sums kept in registers) */
#define RUN_K2(gen, two) (k2 ? run(gen, 1, two, S, T, p) : run(gen, 0, two, S, T, p))
static int64_t run_any(shared_t *S, local_t *T, int p) {
    const int k2 = S->K == 2 && S->M == 2;
    if (S->nth == 2) return S->gen == GEN_F32 ? RUN_K2(GEN_F32, 1) : RUN_K2(GEN_ZIG, 1);
    return S->gen == GEN_F32 ? RUN_K2(GEN_F32, 0) : RUN_K2(GEN_ZIG, 0);
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
    jb->result = run_any(jb->S, jb->T, 1);
    jb->cpu_s = thread_cpu_s() - c0;
    return NULL;
}

static void local_free(local_t *T) {
    free(T->acc);
    free(T->corr);
}

static int local_init(local_t *T, const shared_t *S, const uint64_t *st, const double *x,
                      const double *y) {
    const int64_t KM = S->K + S->M;
    memcpy(T->st, st, sizeof T->st);
    T->acc = aligned_alloc(64, sizeof(v8d) * (size_t)KM);
    /* corr, s0, s1, x, y, c: written at every step, so on cache lines no other thread writes */
    T->corr = aligned_alloc(64, sizeof(double) * (size_t)line_up(4 * KM + S->K + 8));
    if (!T->acc || !T->corr) {
        local_free(T);
        return -1;
    }
    T->s0 = T->corr + KM;
    T->s1 = T->s0 + KM;
    T->x = T->s1 + KM;
    T->y = T->x + S->K;
    T->c = T->y + S->M;
    memcpy(T->x, x, sizeof(double) * (size_t)S->K);
    memcpy(T->y, y, sizeof(double) * (size_t)S->M);
    return 0;
}

/* n_steps SGD steps on stream gen, weights in row layout J (K, N), B (M, N), with 1 or 2
 * threads (the same bits either way).  On entry z, x, y hold the current sample and its
 * fields, on exit the next ones, and st the lanes after that sample was drawn; work holds
 * sgd_work_size(N, K, M) words (64-byte aligned).  Only coordinates a < n_tr are updated.
 * *helper_cpu_s gets the second thread's CPU time (a second thread that cannot be started is
 * done without).  Returns -1, the step t at which a field was not finite (z, x, y, st then as
 * after step t - 1), or -2 if the work space could not be allocated. */
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
    S->J = J; S->B = B; S->scale = scale;
    S->buf[0] = z;
    for (int i = 1; i < NBUF; i++) S->buf[i] = work + (i - 1) * buf_stride(N);
    flagged_t *F = &S->fl[0][0];
    flags_in(F, 2 * NBUF, (uint64_t *)(work + (NBUF - 1) * buf_stride(N)), N);
    const int64_t KM = K + M, box = (KM + 1 + 7) / 8 * 8; /* each on cache lines of its own */
    /* 4 boxes, then 2 step counters and 4 sleep records, a line each */
    double *mail = aligned_alloc(64, sizeof(double) * (size_t)(4 * box + 6 * 8));
    local_t *T = aligned_alloc(64, 2 * ((sizeof(local_t) + 63) / 64 * 64));
    uint64_t st0[4 * SROW];
    memcpy(st0, st, sizeof st0);
    int64_t result = -2;
    if (T) memset(T, 0, 2 * ((sizeof(local_t) + 63) / 64 * 64));
    if (!mail || !T || local_init(&T[0], S, st, x, y)) goto done;
    memset(mail, 0, sizeof(double) * (size_t)(4 * box + 6 * 8));
    for (int p = 0; p < 2; p++)
        for (int par = 0; par < 2; par++) S->box[p][par] = mail + (2 * p + par) * box;
    double *lines = mail + 4 * box;
    S->recorded = (_Atomic int64_t *)lines;
    S->repaired = (_Atomic int64_t *)(lines + 8);
    S->box_sleep[0] = (struct sleep_s *)(lines + 16);
    S->box_sleep[1] = (struct sleep_s *)(lines + 24);
    S->recorded_sleep = (struct sleep_s *)(lines + 32);
    S->repaired_sleep = (struct sleep_s *)(lines + 40);
    S->la = S->nth == 2 && gen == GEN_ZIG ? 2 : 1;
    if (S->nth == 1) {
        result = run_any(S, &T[0], 0);
    } else {
        if (local_init(&T[1], S, st, x, y)) goto done;
        pthread_t th;
        job_t jb = {S, &T[1], -1, 0.0};
        if (pthread_create(&th, NULL, part1_thread, &jb)) {
            /* no second thread to be had: one thread gives the same bits */
            S->nth = 1;
            S->la = 1;
            result = run_any(S, &T[0], 0);
        } else {
            result = run_any(S, &T[0], 0);
            pthread_join(th, NULL);
            *helper_cpu_s = jb.cpu_s;
            if (jb.result != result) result = -2; /* cannot happen: both see the same fields */
            /* part 1's lanes are thread 1's */
            for (int w = 0; w < 4; w++)
                memcpy(T[0].st + w * SROW + 8, T[1].st + w * SROW + 8, 8 * sizeof(uint64_t));
        }
    }
    if (result == -1) {
        if (n_steps % NBUF) memcpy(z, S->buf[n_steps % NBUF], (size_t)N * sizeof(double));
        memcpy(st, T[0].st, sizeof T[0].st);
    } else if (result >= 0) {
        /* the draws ran ahead of step t: draw samples 1 .. t again from the lanes of the
         * start, so that z and st are those after step t - 1 */
        memcpy(st, st0, sizeof st0);
        for (int64_t s = 1; s <= result; s++) sgd_fill(gen, st, scale, z, N, (uint64_t *)(work + (NBUF - 1) * buf_stride(N)));
    }
    if (result >= -1) {
        memcpy(x, T[0].x, sizeof(double) * (size_t)K);
        memcpy(y, T[0].y, sizeof(double) * (size_t)M);
    }
done:
    if (T) {
        local_free(&T[0]);
        local_free(&T[1]);
    }
    free(T);
    free(mail);
    free(S);
    return result;
}
