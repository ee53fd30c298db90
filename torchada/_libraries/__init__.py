"""CUDA shared libraries in the process: ``ctypes`` loads of CUDA libraries served by the MUSA
ones (:mod:`.ctypes_bindings`), shim libraries for CUDA names MUSA lacks (:mod:`.shims`) and the
public name helpers (:mod:`.names`)."""
