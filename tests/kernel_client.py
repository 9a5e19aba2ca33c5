"""A real `rlm` kernel started through jupyter_client, for tests (owner: kernel)."""
