"""Expanding the @file references of a user turn into delimited blocks for the prompt.

A reference that cannot be read becomes a short inline note (and a warning
for the client), never an error of the turn.
"""

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ctxkeep.daemon.config import Config
from ctxkeep.daemon.files.refs import FileRef, find_refs
from ctxkeep.daemon.files.safe_read import Refused, inside, list_dir, read_text, shown
from ctxkeep.daemon.store.records import Attachment
from ctxkeep.daemon.tokens import text_features


@dataclass(frozen=True)
class FileSettings:
    """What the daemon's configuration says about reading files."""

    #: Allowed folders; empty: the client's working directory and below.
    roots: list[str] = field(default_factory=list)
    max_bytes: int = 1 << 20
    #: Files above this many bytes are summarized unless `:full` is asked.
    summary_threshold: int = 5 * 1024
    #: False refuses every reference (e.g. for remote clients).
    allowed: bool = True
    #: A remote client: its working directory is never used (paths resolve in file_roots).
    remote: bool = False
    #: References one message may expand, and bytes of files it may read in all.
    max_refs: int = 20
    max_total_bytes: int = 8 << 20
    #: The session's window (0: no limit): a file that cannot fit it in full is refused
    #: before it is read, and once the files expanded pass it the rest are not read.
    window: int = 0

    @classmethod
    def of(cls, config: Config, remote: bool = False, window: int = 0) -> "FileSettings":
        """What `config` allows a client (`remote`: one over TCP) in a session of `window`."""
        return cls(roots=list(config.file_roots), max_bytes=config.file_max_bytes,
                   max_refs=config.file_refs_per_message,
                   max_total_bytes=config.file_bytes_per_message,
                   summary_threshold=config.file_summary_threshold,
                   allowed=config.remote_file_refs or not remote, remote=remote, window=window)


#: More bytes than any tokenizer puts in one token: a text of more bytes than this many
#: times the window cannot fit it.
MAX_BYTES_PER_TOKEN = 8


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def block(path: str, mode: str, body: str, **attrs: str) -> str:
    """The delimited text of one expansion."""
    extra = "".join(f' {k}="{_attr(v)}"' for k, v in attrs.items())
    return f'<file path="{_attr(path)}" mode="{_attr(mode)}"{extra}>\n{body}\n</file>'


def note(path: str, error: str) -> str:
    """The inline note that stands for a file that was not read."""
    return f'<file path="{_attr(path)}" error="{_attr(error)}"/>'


def expand(text: str, cwd: str, settings: FileSettings, count: Callable[[str], int]) -> list[Attachment]:
    """One Attachment per reference in `text`, in order.

    The rule for where files are read: a local client's working directory is where
    relative paths start; without `file_roots` it is also the only folder allowed (the
    user reads their own files), with `file_roots` it must itself be inside one of them.
    A remote client never chooses: paths start at the first of `file_roots`, which must
    be set."""
    out: list[Attachment] = []
    read = tokens = 0
    where = working_dir(cwd, settings)
    for n, ref in enumerate(find_refs(text)):
        if n >= settings.max_refs:
            out.append(_refused(ref, f"over the limit of {settings.max_refs} references per message "
                                     "(file_refs_per_message)", count))
        elif read >= settings.max_total_bytes:
            out.append(_refused(ref, f"the message already read {read:,} bytes of files, the limit "
                                     "(file_bytes_per_message)", count))
        elif settings.window and tokens > settings.window:
            out.append(_refused(ref, f"not read: the files before it are already about {tokens:,} "
                                     f"tokens, more than the window of {settings.window:,}", count))
        else:
            attachment = _expand_one(ref, where, settings, count)
            read += attachment.size
            tokens += attachment.tokens
            out.append(attachment)
    return out


def _refused(ref: FileRef, why: str, count: Callable[[str], int]) -> Attachment:
    text = note(ref.path, why)
    return Attachment(path=ref.path, mode=ref.label, block=text, tokens=count(text), error=why)


def working_dir(cwd: str, settings: FileSettings) -> str:
    """Where a client's relative paths start; "" refuses its references (with a note)."""
    if settings.remote:
        return settings.roots[0] if settings.roots else ""
    if cwd and settings.roots and not inside(Path(os.path.realpath(cwd)),
                                             [Path(os.path.realpath(r)) for r in settings.roots]):
        return ""
    return cwd


def _expand_one(ref: FileRef, cwd: str, settings: FileSettings,
                count: Callable[[str], int]) -> Attachment:
    from ctxkeep.daemon.files import chunker  # its parsers load on the first @file, not at start
    try:
        if not settings.allowed:
            raise Refused("this client may not read files on the daemon's machine")
        if not cwd and settings.remote:
            raise Refused("remote clients read files only inside file_roots, and none are set")
        if not cwd and settings.roots:
            raise Refused("the working directory is outside file_roots")
        if ref.mode == "listing":
            listing = list_dir(ref.path, cwd, settings.roots)
            lines = [f"{name}/" if is_dir else f"{name} ({size:,} bytes)"
                     for name, is_dir, size in listing.entries]
            if listing.total > len(listing.entries):
                lines.append(f"... and {listing.total - len(listing.entries)} more")
            text = block(ref.path, "listing", "\n".join(lines) or "(empty)")
            return Attachment(path=ref.path, mode="listing", block=text, tokens=count(text),
                              real_path=shown(str(listing.path)))
        fits = settings.window * MAX_BYTES_PER_TOKEN if ref.mode == "full" else 0
        f = read_text(ref.path, cwd, settings.roots, settings.max_bytes, fits)
        mode = ref.label
        if ref.mode == "auto":
            mode = "summary" if f.size > settings.summary_threshold else "full"
        line_count = str(f.text.count("\n") + (0 if f.text.endswith("\n") or not f.text else 1))
        attrs = {"lines": line_count, "bytes": f"{f.size}"}
        summary = ""
        if mode == "full":
            text = block(ref.path, mode, f.text.rstrip("\n"), **attrs)
            summary = block(ref.path, "summary", chunker.summarize(ref.path, f.text), **attrs)
        elif mode == "summary":
            text = block(ref.path, mode, chunker.summarize(ref.path, f.text), **attrs)
        elif ref.mode == "lines":
            text = block(ref.path, mode, chunker.line_range(f.text, ref.first_line, ref.last_line))
        else:
            text = block(ref.path, mode, chunker.element(ref.path, f.text, ref.element))
        return Attachment(path=ref.path, mode=mode, block=text, tokens=count(text), summary=summary,
                          summary_tokens=count(summary) if summary else 0, real_path=shown(str(f.path)),
                          sha256=hashlib.sha256(f.text.encode()).hexdigest(), size=f.size,
                          mtime=f.mtime, features=list(text_features(text)),
                          summary_features=list(text_features(summary)) if summary else [])
    except (Refused, chunker.ElementNotFound) as exc:
        return _refused(ref, str(exc), count)
