"""One adapter per torch namespace other than ``torch.cuda``, each named after it: ``torch.amp``
(:mod:`.amp`), ``torch.profiler``, ``torch.accelerator``, ``torch.backends``, ``torch.compile``,
``torch.serialization`` (:mod:`.checkpoints`) and torch's private names (:mod:`.private_names`)."""
