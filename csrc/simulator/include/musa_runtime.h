/* The MUSA runtime header (the simulator's subset: see musa_runtime_api.h). */
#ifndef TORCHADA_SIM_MUSA_RUNTIME_H
#define TORCHADA_SIM_MUSA_RUNTIME_H

#include "musa_runtime_api.h"

#endif /* TORCHADA_SIM_MUSA_RUNTIME_H */
