#pragma once

#include "../extensions.h"

#define CHECK_CUDA(x) AT_ASSERTM(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_INPUT(x) AT_ASSERTM(x, "Input mismatch")
