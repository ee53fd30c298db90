"""sgl-kernel's layout: the ops live in sgl_like.common_ops (importing it registers them)."""
