"""Uploaded files that outlive the browser tab (no streamlit here).

A participant's CSV or NPZ is written to `<runs root>/uploads/<owner folder>/`, where the
owner folder is derived from the owner key with the server secret (engine/core/identity.py),
so neither the folder name nor the path grants anything. A run keeps referring to its
file (config.json's data_options.path), so membership attacks and reruns work after the
owner's tab is closed. The file goes when the last run that uses it is deleted
(`RunStore.delete_run` calls `forget_if_unused`), or when its owner deletes it.

Privacy assumption: the file is the participant's private data. Its path and name are
shown to its owner and an instructor only (engine/jobs/visibility.py); the server's account
can read it, as it can read every run.

Its owner may instead declare it **public** (`mark_public`): its records then get no
privacy protection, and the ledger neither charges nor caps a run on it
(engine/privacy/ledger.dataset_id), so a study may tune on it for free
(engine/runs/public_tuning.py). The mark is an empty file of the same name in the owner
folder's `.public/` (a folder, so `files_of` never lists it), beside the file it marks, so
the ledger can tell from a run's path alone. It is for good: runs made while the file was
public were not charged and cannot be charged after the fact, so there is no unmarking;
deleting the file deletes its mark.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from engine.core import identity
from engine.core.errors import InputError

MAX_UPLOAD_MB = 50  # stated on the upload widget before a file is chosen
UPLOADS = "uploads"
PUBLIC_MARKS = ".public"  # inside an owner folder: one empty file per upload marked public


def owner_folder(root, owner: str) -> Path:
    """This owner's upload folder (the name is a keyed hash of the owner key)."""
    if not owner:
        raise InputError("an upload needs an owner (a browser session).")
    return Path(root) / UPLOADS / identity._mac(root, "uploads", owner)[:32]


def save(root, owner: str, name: str, content: bytes, *,
         max_mb: float = MAX_UPLOAD_MB) -> Path:
    """Keep `content` in the owner's folder (same bytes, same file); returns its path."""
    if len(content) > max_mb * 1024 * 1024:
        raise InputError(f"{name} is {len(content) / 1024 / 1024:.1f} MB; uploads are limited "
                         f"to {max_mb:g} MB here. Use a sample of the records, or the command "
                         "line (python -m engine train --csv FILE).")
    folder = owner_folder(root, owner)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[-60:]
    path = folder / f"{hashlib.sha256(content).hexdigest()[:12]}-{safe}"
    if not path.exists():
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(content)
        tmp.replace(path)  # a run reading it never sees half a file
    return path


def is_upload(root, path: str | Path | None) -> bool:
    """Is `path` a file in this store's upload folders?"""
    if not path:
        return False
    try:
        return Path(path).resolve().is_relative_to((Path(root) / UPLOADS).resolve())
    except OSError:
        return False


def files_of(root, owner: str) -> list[Path]:
    """The owner's uploaded files, newest first."""
    folder = owner_folder(root, owner)
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir() if p.is_file() and not p.name.endswith(".part")]
    return sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)


def owns(root, owner: str | None, path: str | Path | None) -> bool:
    """Is `path` one of `owner`'s uploads in this store?"""
    if not owner or not path:
        return False
    try:
        p = Path(path).resolve()
        return p.is_file() and p.parent == owner_folder(root, owner).resolve()
    except OSError:
        return False


def _mark(path: str | Path) -> Path:
    p = Path(path)
    return p.parent / PUBLIC_MARKS / p.name


def mark_public(root, owner: str | None, path: str | Path) -> None:
    """The owner declares their file public: from now on no run on it is charged (its
    records get no privacy protection). Only the uploader may; for good (see above)."""
    if not owns(root, owner, path):
        raise InputError("only the participant who uploaded a file can mark it public.")
    mark = _mark(Path(path).resolve())
    mark.parent.mkdir(exist_ok=True, mode=0o700)
    mark.touch()


def is_public(path: str | Path | None) -> bool:
    """Has this uploaded file been marked public by its owner? (Only files in an upload
    folder can be: a path outside `<root>/uploads/<owner>/` is never public.)"""
    if not path:
        return False
    p = Path(path)
    return p.parent.parent.name == UPLOADS and _mark(p).is_file()


def display_name(path: str | Path) -> str:
    """The name the owner gave the file (without the content-hash prefix)."""
    return re.sub(r"^[0-9a-f]{12}-", "", Path(path).name)


def delete(root, owner: str, path: str | Path) -> None:
    """The owner deletes one of their uploads (runs using it can no longer be attacked
    or rerun; their DP outputs stay)."""
    p = Path(path).resolve()
    if p.parent != owner_folder(root, owner).resolve():
        raise InputError("only the participant who uploaded a file can delete it.")
    p.unlink(missing_ok=True)
    _mark(p).unlink(missing_ok=True)


def forget_if_unused(root, path: str | Path | None, configs) -> bool:
    """Remove an uploaded file no remaining run's config refers to (`configs`: the
    RunConfigs still in the store). True when it was removed."""
    if not is_upload(root, path):
        return False
    target = Path(path).resolve()
    for c in configs:
        other = (c.data_options or {}).get("path")
        if other and Path(str(other)).resolve() == target:
            return False
    target.unlink(missing_ok=True)
    _mark(target).unlink(missing_ok=True)
    return True
