"""The paths an `apply_patch` envelope (OpenAI Codex's file-edit format) touches.

Codex's own parser trims each hunk header before reading it, so a header indented by spaces or tabs still
adds, updates, deletes or moves a file: headers are read here the same way, or the write-gate would miss a
file the patch changes. `*** Begin Patch` / `*** Add File: <path>` / `*** Update File: <path>` /
`*** Move to: <path>` / `*** Delete File: <path>` / `*** End Patch`, paths relative to where it runs."""

from __future__ import annotations

MARKERS = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")


def patch_paths(patch: str) -> tuple[str, ...]:
    """Every file `patch` adds, updates, deletes or moves to, in order, each once; () when it names none."""
    paths = []
    for line in patch.splitlines():
        line = line.strip()
        for marker in MARKERS:
            if line.startswith(marker) and line[len(marker):].strip():
                paths.append(line[len(marker):].strip())
    return tuple(dict.fromkeys(paths))
