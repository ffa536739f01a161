"""Which files a tool wrote, so that it replaces only its own: a record of their sha256 beside them.

make_world keeps `.make_world.json` beside the corpus it writes, the demo `.made-by-demo.json` in its
work folder. Before writing, a tool asks `foreign()` for the first file of the names it is about to
write that the record does not hold as it is now: a file the tool never wrote (the course's data, a
student's params), or one changed since (edited by hand, remade by another command). Such a file is
refused, not replaced. Standard library only (make_world runs without torch).
"""
import hashlib
import json
import os
import tempfile


def sha256_of(path):
    """The sha256 of a file's bytes, or None when it cannot be read (a folder, a dangling link)."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def read_record(folder, record):
    """({file name: sha256} of `folder`'s record file, or None when there is none or it cannot be read;
    why it is None, or what a mismatch means, for an error message)."""
    try:
        with open(os.path.join(folder, record), encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None, f"no {record} beside it"
    except (OSError, ValueError):
        return None, f"{record} beside it cannot be read"
    hashes = doc.get("sha256") if isinstance(doc, dict) else None
    if not isinstance(hashes, dict):
        return None, f"{record} beside it cannot be read"
    return hashes, "changed since"


def foreign(folder, record, names, harmless=None):
    """(path, why) of the first of `names` present in `folder` that its record does not hold with the
    file's current sha256, or None when every one is the tool's own. `harmless(name, path)`, when given,
    may say a file is safe to replace all the same (make_world: the bytes it is about to write)."""
    present = [name for name in names if os.path.lexists(os.path.join(folder, name))]
    if not present:
        return None
    hashes, why = read_record(folder, record)
    for name in present:
        path = os.path.join(folder, name)
        digest = sha256_of(path)
        if hashes is not None and digest is not None and hashes.get(name) == digest:
            continue
        if harmless is not None and harmless(name, path):
            continue
        return path, why
    return None


def record_text(hashes, about, **extra):
    """The JSON text of a record: {"about": ..., "sha256": {name: hash}, **extra}."""
    return json.dumps(dict(extra, about=about, sha256=dict(sorted(hashes.items()))), indent=1, sort_keys=True) + "\n"


def add_to_record(folder, record, names, about):
    """Record the current sha256 of `names` (files in `folder` the tool has just written) in its record,
    keeping the other entries; written atomically (a temporary file renamed over it)."""
    hashes, _ = read_record(folder, record)
    hashes = dict(hashes or {})
    for name in names:
        digest = sha256_of(os.path.join(folder, name))
        if digest is not None:
            hashes[name] = digest
    fd, tmp = tempfile.mkstemp(prefix=record + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(record_text(hashes, about))
        os.replace(tmp, os.path.join(folder, record))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
