#pragma once
#include <torch/extension.h>
