"""The PyTorch profiler on MUSA: CUDA activity means the MUSA (PrivateUse1) activity.

* ``torch.profiler.profile(activities=...)`` (a list, set, tuple or any iterable, bare activities
  or ``{activity: [filters]}`` dicts), its default activities and ``toggle_collection_dynamic``
  read ``ProfilerActivity.CUDA`` as ``ProfilerActivity.MUSA``; the profile's ``use_device`` is
  then "musa", so kernels and device memory are attributed to MUSA.
* ``torch.profiler.supported_activities()`` lists CUDA besides CPU and MUSA when MUSA is
  supported: CUDA programs that test for it before asking for it keep working.
* ``torch.autograd.profiler.profile(use_cuda=True)`` / ``use_device="cuda"`` profile musa. Such
  a request uses Kineto (as ``torch.profiler`` does) when Kineto traces MUSA; the legacy
  device-event path needs profiler stubs registered by the backend.

``ProfilerActivity.CUDA`` itself is not redefined: torch compares activities by value in many
places (``use_device = "cuda"`` when CUDA is requested), so the translation is done where
activities enter. Sort keys ("cuda_time_total", "self_cuda_time_total") need nothing: torch
reads them as the device columns already.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Dict

import torch
from torch._C._profiler import ProfilerActivity

from .._core.arguments import rewriting
from .._devices.rule import musa_spec

if TYPE_CHECKING:
    from .._core.patcher import Patcher

_CUDA = ProfilerActivity.CUDA
_MUSA = ProfilerActivity.PrivateUse1


def _translate_activity(activity: Any) -> Any:
    return _MUSA if activity == _CUDA else activity


def translate_activities(activities: Iterable[Any]) -> list[Any]:
    """CUDA -> MUSA in a profiler ``activities`` argument. A repeated MUSA entry is dropped, so
    that asking for both CUDA and MUSA is not "specified more than once"."""
    out: list[Any] = []
    seen: set[Any] = set()
    for item in activities:
        if isinstance(item, dict):
            translated = {}
            for key, value in item.items():
                new = _translate_activity(key)
                if new == _MUSA and new in seen:
                    continue
                seen.add(new)
                translated[new] = value
            out.append(translated)
            continue
        new = _translate_activity(item)
        if new == _MUSA and new in seen:
            continue
        if isinstance(new, ProfilerActivity):
            seen.add(new)
        out.append(new)
    return out


def _musa_supported(original: Any) -> bool:
    return _MUSA in original()


def _patch_supported_activities(patcher: Any) -> Any:
    module = torch.profiler.profiler
    original = module.supported_activities

    @functools.wraps(original)
    def supported_activities() -> set[Any]:
        activities = set(original())
        if _MUSA in activities:
            activities.add(_CUDA)  # served as MUSA
        return activities

    patcher.set_attr(module, "supported_activities", supported_activities)
    patcher.set_attr(torch.profiler, "supported_activities", supported_activities)
    return original


def _patch_kineto_profile(patcher: Any, original_supported: Any) -> None:
    cls = torch.profiler.profiler._KinetoProfile
    original_init = cls.__init__
    original_toggle = getattr(cls, "toggle_collection_dynamic", None)

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        activities = kwargs.get("activities")
        # torch's default (supported_activities(), which now lists CUDA) made explicit.
        kwargs["activities"] = translate_activities(
            original_supported() if activities is None else activities
        )
        original_init(self, *args, **kwargs)

    patcher.set_attr(cls, "__init__", __init__)
    if original_toggle is not None:

        @functools.wraps(original_toggle)
        def toggle_collection_dynamic(self: Any, enable: bool, activities: Iterable[Any]) -> Any:
            return original_toggle(self, enable, translate_activities(activities))

        patcher.set_attr(cls, "toggle_collection_dynamic", toggle_collection_dynamic)


def _patch_autograd_profile(patcher: Any, original_supported: Any) -> None:
    cls = torch.autograd.profiler.profile
    backend = torch._C._get_privateuse1_backend_name()

    def profile_musa_for_cuda(arguments: Dict[str, Any]) -> None:
        use_device = arguments.get("use_device")
        wants_cuda = arguments.get("use_cuda") or musa_spec(use_device) is not use_device
        if wants_cuda:
            arguments["use_cuda"] = False
            arguments["use_device"] = backend
            # Kineto traces MUSA like torch.profiler does; the legacy path would need the
            # backend's profiler stubs (see the module docstring).
            if not arguments.get("use_kineto") and _musa_supported(original_supported):
                arguments["use_kineto"] = True

    patcher.set_attr(cls, "__init__", rewriting(cls.__init__, profile_musa_for_cuda))


def install(patcher: Patcher) -> None:
    original_supported = _patch_supported_activities(patcher)
    _patch_kineto_profile(patcher, original_supported)
    _patch_autograd_profile(patcher, original_supported)
