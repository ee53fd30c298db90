"""``torch.cuda`` and its submodules on MUSA: proxies built from the registry tables
(:mod:`.redirect`), CUDA device arguments read as MUSA ones (:mod:`.device_args`), the fills
torchada supplies where torch_musa lacks a name (:mod:`.fills`) and the registry's documentation
(:mod:`.registry_docs`)."""
