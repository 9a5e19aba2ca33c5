"""rlm_kernel.rlm subpackage."""
