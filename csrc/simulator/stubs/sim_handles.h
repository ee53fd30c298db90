/*
 * Stream and event handles shared by the simulator's backend (sim_runtime.cpp) and libmusart. On a
 * real machine torch_musa's Stream.musa_stream and Event.musa_event are the runtime's musaStream_t
 * and musaEvent_t, so a program may hand them to libmusart through ctypes; here too. The tag at
 * the start catches mix-ups and use after destroy.
 */
#ifndef TORCHADA_SIM_HANDLES_H
#define TORCHADA_SIM_HANDLES_H

#include <time.h>

#define SIM_STREAM_TAG 0x5354524du
#define SIM_EVENT_TAG 0x4556544du

typedef struct {
  unsigned tag;
  int device;
} sim_stream;

typedef struct {
  unsigned tag;
  int recorded;
  struct timespec when; /* CLOCK_MONOTONIC at the last record */
} sim_event;

#endif /* TORCHADA_SIM_HANDLES_H */
