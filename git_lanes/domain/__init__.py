"""Decisions: lanes, transitions, promotion, gates, coordination. No printing, no environment, no pygit2."""

# How many recent posts a read of the board shows when the caller names no limit: the one default of every face
# (`board read`, REST `/board` and `/board/read`, MCP `read_board`, the SDK), so people and agents see the same.
BOARD_LIMIT = 20
