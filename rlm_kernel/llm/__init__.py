"""rlm_kernel.llm subpackage."""
