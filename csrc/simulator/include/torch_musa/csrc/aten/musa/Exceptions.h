// ATen's MUSA checks (AT_MUSA_CHECK), the same as c10's.
#pragma once

#include <torch_musa/csrc/core/MUSAException.h>

#define AT_MUSA_CHECK(EXPR) C10_MUSA_CHECK(EXPR)
