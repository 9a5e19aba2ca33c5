"""rlm_kernel.sandbox subpackage."""
