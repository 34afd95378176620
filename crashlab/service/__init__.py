"""The world as a real service: an HTTP issue tracker, in a process of its own, over SQLite.

A loop's tools call it with any HTTP client (or over MCP), as they would call GitHub or Jira. The
tracker stands in for the outside world, so its records outlive every crash, as a real service's
database would: a loop killed mid-request comes back to find exactly what the service committed.

`store` keeps the records, `app` says what a request means (the Idempotency-Key rules), `mcp`
offers the same tools over MCP, `server` runs it under uvicorn, `line` is the service's end of the
control line (`control`) through which a harness sees every event and decides every death, and
`process` is the harness's handle on a running service.
"""
