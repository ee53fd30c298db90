"""What every subsystem stands on: the patcher, the environment switches, the platform, the
data tables, post-import callbacks, argument rewriting, the usage record, version guards and the
warn-once helper. Imports no subsystem; this file imports nothing (``import torchada`` loads
``env`` and ``platform`` from here and nothing else)."""
