"""The HTTP face (`git lanes serve`): a REST API over `Lanes`, server-sent events of what changed, and the
dashboard. Starlette and uvicorn load only when the server starts."""
