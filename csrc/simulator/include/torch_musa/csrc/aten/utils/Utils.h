// The device constants of torch_musa's aten/utils/Utils.h. Real torch_musa's MUSAStream.h
// includes this header, so code that includes MUSAContext.h, MUSAGuard.h or MUSAStream.h sees
// at::musa::kMUSA and at::kMUSA. The rest of the real header (muDNN tensors and handles,
// dispatch macros) needs the MUSA SDK and is not modelled.
#pragma once

#include <c10/core/Backend.h>
#include <c10/core/DeviceType.h>
#include <c10/core/DispatchKey.h>

namespace at {
namespace musa {

constexpr c10::Backend kMUSABackend = c10::Backend::PrivateUse1;
constexpr c10::DeviceType kMUSA = c10::DeviceType::PrivateUse1;
constexpr c10::DispatchKey kMUSAKey = c10::DispatchKey::PrivateUse1;

}  // namespace musa

using musa::kMUSA;

}  // namespace at
