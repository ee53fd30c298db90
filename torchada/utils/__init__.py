"""Build helpers under the names the published adapter gave them (``torchada.utils.cpp_extension``).
Importing this package turns nothing on beyond what ``import torchada`` does."""
