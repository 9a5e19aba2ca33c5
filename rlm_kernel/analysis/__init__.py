"""rlm_kernel.analysis subpackage."""
