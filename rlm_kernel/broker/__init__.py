"""The LLM broker: a separate process that holds the API keys and makes every model call for one kernel.

`supervisor` forks brokers from the launcher (before the kernel drops its keys), `server` is the
broker's main, `link` is the kernel's side of the socket, `protocol` the framing, `endpoints`
which key may go where.
"""
