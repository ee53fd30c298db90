"""``torch.distributed`` on MUSA: "nccl" is MCCL. :mod:`.c10d` holds the registry's fills for
``torch.distributed`` and patches c10d's device-taking methods; :mod:`.backend_map` makes MCCL the
default backend of the "cuda" device type."""
