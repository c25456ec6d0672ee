"""Decisions: lanes, transitions, promotion, gates, coordination. No printing, no environment, no pygit2."""
