"""torch_musa.distributed._composable: torch_musa's patches of torch's composable APIs."""
