"""What torchada supplies where torch_musa lacks a CUDA name. Each fill is referenced by the
registry (torchada/tables/torch_cuda.json) and behaves correctly on MUSA."""
