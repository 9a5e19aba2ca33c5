"""rlm_kernel.repl subpackage."""
