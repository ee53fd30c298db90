"""Operators on the MUSA (PrivateUse1) dispatch key: CUDA kernels of ``torch.library`` serve MUSA
(:mod:`.custom_ops`), torchada's own C++ overrides (:mod:`.overrides`, public as
``torchada.op_overrides``), and ATen kernels torch_musa lacks (:mod:`.aten_kernels`)."""
