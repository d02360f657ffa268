"""Helpers shared by the example kernels (a test file reaches them through the kernel's imports)."""
