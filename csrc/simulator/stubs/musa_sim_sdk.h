/*
 * Shared by the simulated MUSA SDK libraries (libmusart, libmusa, libmccl, libmublas, libmurand).
 *
 * Everything here is `static`: each library exports only its own prefix (musa*, mu*, mccl*,
 * mublas*, murand*), so a program that asks one of them for a cuda*, nccl*, cublas* or curand*
 * name fails to resolve it, as it would on a real MUSA machine.
 *
 * The simulated machine is described by the same environment as the Python simulator:
 *   TORCHADA_SIM_DEVICES  number of physical devices (default 2, at most 16)
 *   MUSA_VISIBLE_DEVICES  comma list of visible physical indices; the list stops at the first
 *                         invalid or repeated entry (as CUDA_VISIBLE_DEVICES does)
 *   TORCHADA_SIM_BOARD    S80, S3000, S4000 (default) or S5000, "MTT " prefix optional
 * Device memory is host memory: pointers the libraries hand out are ordinary heap pointers.
 */
#ifndef TORCHADA_MUSA_SIM_SDK_H
#define TORCHADA_MUSA_SIM_SDK_H

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SIM_API __attribute__((visibility("default")))

/* Keep in step with torchada/_simulator/boards.py (the tests compare them). */
#define SIM_MUSA_VERSION 50100 /* MUSA SDK 5.1.0, encoded major*10000 + minor*100 + patch */
#define SIM_MCCL_VERSION 21104 /* MCCL 2.11.4, same encoding */
#define SIM_MUBLAS_VERSION 50100
#define SIM_DEFAULT_DEVICES 2
#define SIM_MAX_DEVICES 16

typedef struct {
  const char* key; /* TORCHADA_SIM_BOARD value, upper case, without "MTT" */
  const char* name;
  int major, minor;
  uint64_t total_memory;
  int sm_count;
} sim_board;

#define SIM_GIB ((uint64_t)1 << 30)

static const sim_board sim_boards[] = {
    {"S80", "MTT S80", 2, 1, 16 * SIM_GIB, 32},
    {"S3000", "MTT S3000", 2, 1, 32 * SIM_GIB, 32},
    {"S4000", "MTT S4000", 2, 2, 48 * SIM_GIB, 48},
    /* 79.91 GiB, truncated to bytes as boards.py does */
    {"S5000", "MTT S5000", 3, 1, (uint64_t)(79.91 * (double)SIM_GIB), 56},
};

static inline const sim_board* sim_board_get(void) {
  const char* env = getenv("TORCHADA_SIM_BOARD");
  char key[32] = {0};
  size_t n = 0;
  if (env != NULL) {
    for (const char* p = env; *p != '\0' && n + 1 < sizeof key; ++p) {
      if (!isspace((unsigned char)*p)) key[n++] = (char)toupper((unsigned char)*p);
    }
  }
  const char* k = strncmp(key, "MTT", 3) == 0 ? key + 3 : key;
  for (size_t i = 0; i < sizeof sim_boards / sizeof sim_boards[0]; ++i) {
    if (strcmp(k, sim_boards[i].key) == 0) return &sim_boards[i];
  }
  return &sim_boards[2]; /* unknown or unset: the default board, S4000 */
}

static inline int sim_physical_devices(void) {
  const char* env = getenv("TORCHADA_SIM_DEVICES");
  if (env == NULL || *env == '\0') return SIM_DEFAULT_DEVICES;
  char* end = NULL;
  long v = strtol(env, &end, 10);
  while (end != NULL && isspace((unsigned char)*end)) ++end;
  if (end == env || (end != NULL && *end != '\0') || v < 0) return SIM_DEFAULT_DEVICES;
  return v > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)v;
}

/* Visible device count, same rules as torchada/_simulator/config.py. */
static inline int sim_device_count(void) {
  int physical = sim_physical_devices();
  const char* vis = getenv("MUSA_VISIBLE_DEVICES");
  if (vis == NULL) return physical;
  int seen[SIM_MAX_DEVICES] = {0};
  int count = 0;
  const char* p = vis;
  for (;;) {
    while (isspace((unsigned char)*p)) ++p;
    char* end = NULL;
    long idx = strtol(p, &end, 10);
    if (end == p) break;
    while (isspace((unsigned char)*end)) ++end;
    if (*end != ',' && *end != '\0') break;
    if (idx < 0 || idx >= physical || seen[idx]) break;
    seen[idx] = 1;
    ++count;
    if (*end == '\0') break;
    p = end + 1;
  }
  return count;
}

#endif /* TORCHADA_MUSA_SIM_SDK_H */
