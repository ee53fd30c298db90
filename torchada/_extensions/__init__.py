"""``torch.utils.cpp_extension`` for CUDA extensions: the torch-facing functions
(:mod:`.cpp_extension`), build settings (:mod:`.build_settings`), sources ported into the build
tree (:mod:`.build_porting`) and ``CUDA_HOME`` (:mod:`.cuda_home`)."""
