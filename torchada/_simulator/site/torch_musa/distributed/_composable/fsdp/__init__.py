"""torch_musa.distributed._composable.fsdp: its FSDP2 patches (see patch)."""
