/*
 * libmurand.so of the simulated MUSA SDK: host-side pseudo-random generators.
 *
 * Status codes (murandStatus_t); the real values are not public, these follow cuRAND's numbering:
 *   0   MURAND_STATUS_SUCCESS
 *   101 MURAND_STATUS_NOT_INITIALIZED       null or destroyed generator
 *   102 MURAND_STATUS_ALLOCATION_FAILED
 *   103 MURAND_STATUS_TYPE_ERROR            generator type the simulator does not offer
 *   104 MURAND_STATUS_OUT_OF_RANGE          null output with n > 0, negative stddev
 *   105 MURAND_STATUS_LENGTH_NOT_MULTIPLE   murandGenerateNormal with an odd n (made in pairs)
 * murandRngType_t accepted: 100 PSEUDO_DEFAULT, 101 PSEUDO_XORWOW, 141 PSEUDO_PHILOX4_32_10.
 * All three draw from one Philox4x32-10 stream keyed by the seed (default seed 0), so results are
 * reproducible by seed but are not the numbers real hardware would give. Setting the seed restarts
 * the stream; each call continues where the previous one stopped. Uniform values lie in (0, 1].
 */
#include "musa_sim_sdk.h"

typedef int murandStatus_t;

enum {
  MURAND_STATUS_SUCCESS = 0,
  MURAND_STATUS_NOT_INITIALIZED = 101,
  MURAND_STATUS_ALLOCATION_FAILED = 102,
  MURAND_STATUS_TYPE_ERROR = 103,
  MURAND_STATUS_OUT_OF_RANGE = 104,
  MURAND_STATUS_LENGTH_NOT_MULTIPLE = 105,
};

enum {
  MURAND_RNG_PSEUDO_DEFAULT = 100,
  MURAND_RNG_PSEUDO_XORWOW = 101,
  MURAND_RNG_PSEUDO_PHILOX4_32_10 = 141,
};

#define GEN_TAG 0x52414e44u

typedef struct {
  unsigned tag;
  int type;
  uint64_t seed;
  uint64_t position; /* in 32-bit words drawn since the seed was set */
} sim_generator;

typedef sim_generator* murandGenerator_t;

static sim_generator* live(murandGenerator_t g) {
  return g != NULL && g->tag == GEN_TAG ? g : NULL;
}

/* One Philox4x32-10 block: 128 random bits for a 128-bit counter under a 64-bit key. */
static void philox_block(uint64_t counter, uint64_t seed, uint32_t out[4]) {
  uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

static uint32_t next_word(sim_generator* g) {
  uint32_t block[4];
  philox_block(g->position / 4, g->seed, block);
  return block[g->position++ % 4];
}

/* Box-Muller needs log, sqrt, sin and cos. They are computed here rather than taken from libm:
 * the build links no libraries, and an undefined `log` would make the library fail to load in any
 * program that has not loaded libm itself. Accurate to a few ulp over the ranges used below. */
static double sim_log(double x) { /* x > 0 */
  union {
    double d;
    uint64_t u;
  } v = {x};
  int e = (int)((v.u >> 52) & 0x7ff) - 1023;
  v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* mantissa in [1, 2) */
  double m = v.d;
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++e;
  }
  /* log(m) = 2 atanh(z), z = (m-1)/(m+1), |z| < 0.172: the odd series converges fast */
  double z = (m - 1.0) / (m + 1.0), z2 = z * z, term = z, sum = 0.0;
  for (int k = 1; k < 40; k += 2) {
    sum += term / k;
    term *= z2;
  }
  return e * 0.6931471805599453 + 2.0 * sum;
}

static double sim_sqrt(double x) { /* x >= 0 */
  if (x == 0.0) return 0.0;
  union {
    double d;
    uint64_t u;
  } v = {x};
  v.u = (v.u >> 1) + 0x1ff8000000000000ull; /* halve the exponent: a guess within a few % */
  double y = v.d;
  for (int i = 0; i < 6; ++i) y = 0.5 * (y + x / y);
  return y;
}

/* sin and cos of theta in [0, 2 pi), by Taylor series around pi (|t| <= pi). */
static void sim_sincos(double theta, double* s, double* c) {
  const double pi = 3.141592653589793;
  double t = theta - pi, t2 = t * t;
  double st = t, ct = 1.0, ssum = 0.0, csum = 0.0;
  for (int n = 1; n < 60; n += 2) { /* st = t^n/n!, ct = t^(n-1)/(n-1)!, alternating */
    ssum += st;
    csum += ct;
    st *= -t2 / ((n + 1.0) * (n + 2.0));
    ct *= -t2 / (n * (n + 1.0));
  }
  *s = -ssum; /* sin(t + pi) = -sin(t) */
  *c = -csum;
}

/* (0, 1]: never 0, so the log in Box-Muller stays finite. */
static double next_uniform(sim_generator* g) { return ((double)next_word(g) + 1.0) / 4294967296.0; }

SIM_API murandStatus_t murandCreateGenerator(murandGenerator_t* generator, int rng_type) {
  if (generator == NULL) return MURAND_STATUS_NOT_INITIALIZED;
  if (rng_type != MURAND_RNG_PSEUDO_DEFAULT && rng_type != MURAND_RNG_PSEUDO_XORWOW &&
      rng_type != MURAND_RNG_PSEUDO_PHILOX4_32_10)
    return MURAND_STATUS_TYPE_ERROR;
  sim_generator* g = calloc(1, sizeof *g);
  if (g == NULL) return MURAND_STATUS_ALLOCATION_FAILED;
  g->tag = GEN_TAG;
  g->type = rng_type;
  *generator = g;
  return MURAND_STATUS_SUCCESS;
}

SIM_API murandStatus_t murandDestroyGenerator(murandGenerator_t generator) {
  sim_generator* g = live(generator);
  if (g == NULL) return MURAND_STATUS_NOT_INITIALIZED;
  g->tag = 0;
  free(g);
  return MURAND_STATUS_SUCCESS;
}

SIM_API murandStatus_t murandSetPseudoRandomGeneratorSeed(murandGenerator_t generator,
                                                          unsigned long long seed) {
  sim_generator* g = live(generator);
  if (g == NULL) return MURAND_STATUS_NOT_INITIALIZED;
  g->seed = seed;
  g->position = 0;
  return MURAND_STATUS_SUCCESS;
}

SIM_API murandStatus_t murandGenerateUniform(murandGenerator_t generator, float* out, size_t n) {
  sim_generator* g = live(generator);
  if (g == NULL) return MURAND_STATUS_NOT_INITIALIZED;
  if (n > 0 && out == NULL) return MURAND_STATUS_OUT_OF_RANGE;
  for (size_t i = 0; i < n; ++i) {
    out[i] = (float)next_uniform(g);
  }
  return MURAND_STATUS_SUCCESS;
}

SIM_API murandStatus_t murandGenerateNormal(murandGenerator_t generator, float* out, size_t n,
                                            float mean, float stddev) {
  sim_generator* g = live(generator);
  if (g == NULL) return MURAND_STATUS_NOT_INITIALIZED;
  if ((n > 0 && out == NULL) || stddev < 0.0f) return MURAND_STATUS_OUT_OF_RANGE;
  if (n % 2 != 0) return MURAND_STATUS_LENGTH_NOT_MULTIPLE;
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < n; i += 2) {
    double r = sim_sqrt(-2.0 * sim_log(next_uniform(g)));
    double theta = two_pi * (next_uniform(g) - 1.0 / 4294967296.0); /* [0, 2 pi) */
    double s, c;
    sim_sincos(theta, &s, &c);
    out[i] = (float)(mean + stddev * r * c);
    out[i + 1] = (float)(mean + stddev * r * s);
  }
  return MURAND_STATUS_SUCCESS;
}
