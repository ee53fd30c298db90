"""A "cuda" device is the musa one: :mod:`.rule` reads device specs (every other subsystem reads
devices through it), :mod:`.install` makes torch's own factories, tensors and checkpoints follow
the rule, :mod:`.visible` maps ``CUDA_VISIBLE_DEVICES`` onto MUSA's. Imports nothing itself: the
visible-devices step runs before torch is imported."""
