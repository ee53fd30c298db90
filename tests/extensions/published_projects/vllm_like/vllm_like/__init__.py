"""A platform plugin in the style of vLLM-MUSA's: torchada is imported early, and the platform is
chosen with torchada.is_musa_platform()."""

try:
    # isort: off
    import torchada  # noqa: F401
    import torch  # noqa: F401

    # isort: on

    _torchada_available = True
except ImportError:
    _torchada_available = False


def musa_platform_plugin():
    if _torchada_available:
        import torchada

        if torchada.is_musa_platform():
            return "vllm_like.platform.MUSAPlatform"
    return None
