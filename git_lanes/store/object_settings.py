"""How the repository's config says new objects are to be written, read through pygit2 for the ledger's object
cache (`object_cache.py`) at its first write and for the upkeep after writes (`Store.upkeep`): synced to disk
or not, the modes `core.sharedRepository` asks for, the zlib level, and whether git consolidates the packs a
batch adds. Each setting is parsed as `loose_write` parses it for the light path, which reads git's files
itself."""

from __future__ import annotations

import pygit2

from git_lanes.store.loose_write import durable_objects, durable_packs, loose_compression, shared_permissions


def durable(config: pygit2.Config) -> tuple[bool, bool]:
    """Whether new loose objects, and new packs, are to be synced to disk."""
    try:
        fsync_object_files = config.get_bool("core.fsyncObjectFiles")
    except KeyError:
        fsync_object_files = False
    except pygit2.GitError:
        fsync_object_files = True  # a value git would refuse: the safer reading
    try:
        fsync: str | None = config["core.fsync"]
    except KeyError:
        fsync = None
    return durable_objects(fsync_object_files, fsync), durable_packs(fsync_object_files, fsync)


def consolidates_packs(config: pygit2.Config) -> bool:
    """Whether git's automatic upkeep runs here (`gc.auto`, `gc.autoPackLimit`, neither 0 or below, as git
    reads them): the packs batches add are then consolidated by it and by the ledger's upkeep
    (`Store.upkeep`). Where the user turned it off, batches stay loose objects, which cost readers nothing
    however many there are."""
    return config_int(config, "gc.auto", 6700) > 0 and config_int(config, "gc.autoPackLimit", 50) > 0


def config_int(config: pygit2.Config, key: str, default: int) -> int:
    """An integer setting as git reads it (k, m, g suffixes); 0 (off) for a value git would refuse."""
    try:
        return int(config.get_int(key))
    except KeyError:
        return default
    except (ValueError, pygit2.GitError):
        return 0


def shared(config: pygit2.Config) -> int:
    """`core.sharedRepository` as `loose_write.shared_permissions` reads it: the modes new objects get."""
    try:
        return shared_permissions(config["core.sharedRepository"])
    except KeyError:
        return 0


def compression(config: pygit2.Config) -> int | None:
    """The level the config asks for, None when it sets neither key."""
    def value(key: str) -> str | None:
        try:
            found: str | None = config[key]  # None for a key without a value
        except KeyError:
            return None
        return found

    loose, core = value("core.looseCompression"), value("core.compression")
    return None if loose is None and core is None else loose_compression(loose, core)
