"""rlm_kernel.widgets subpackage."""
