"""Native code torchada builds for itself (also used by the simulator): the cached, locked
builder (:mod:`.build`), the ``torchada_native`` library (:mod:`.library`) and ``python -m torchada
build`` (:mod:`.command`)."""
