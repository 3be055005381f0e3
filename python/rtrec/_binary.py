"""Finding the ``rtrec`` command and running it.

Design choice: this package reads nothing itself; every answer comes from
the ``rtrec`` binary (see the package docstring). The binary is, in order:
the ``RTREC`` environment variable, ``rtrec`` on ``PATH``, else
``target/release/rtrec`` of the checkout this package was installed from
(pip records that directory in ``direct_url.json``) or imported from.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse


class RtrecError(Exception):
    """rtrec refused or failed; the message is rtrec's own sentence."""


class RtrecNotFound(RtrecError, FileNotFoundError):
    """No ``rtrec`` binary was found (the message says how to get one)."""


def _checkouts():
    """Checkouts this package may come from: the one pip installed it
    from (PEP 610 ``direct_url.json``), and the one it is imported from."""
    try:
        from importlib.metadata import distribution

        url = json.loads(distribution("rtrec").read_text("direct_url.json") or "{}")
        u = urlparse(url.get("url", ""))
        if u.scheme == "file":
            yield Path(unquote(u.path)).parent
    except Exception:  # not installed, or installed without a record
        pass
    yield Path(__file__).resolve().parent.parent.parent


def find():
    """The path of the ``rtrec`` binary to run.

    Raises:
        RtrecNotFound: none was found.
    """
    env = os.environ.get("RTREC")
    if env:
        if not os.access(env, os.X_OK):
            raise RtrecNotFound(f"RTREC={env} is not an executable file")
        return env
    on_path = shutil.which("rtrec")
    if on_path:
        return on_path
    for checkout in _checkouts():
        built = checkout / "target" / "release" / "rtrec"
        if os.access(built, os.X_OK):
            return str(built)
    raise RtrecNotFound(
        "the rtrec command was not found: set RTREC=/path/to/rtrec, put rtrec on PATH, "
        "or run `cargo build --release` in the rtrec checkout this package was installed from"
    )


def run(args, ok=(0,)):
    """Runs ``rtrec ARGS``; returns (exit code, stdout, stderr) as text.

    Raises:
        RtrecError: the exit code is not in ``ok``; rtrec's stderr is the
            message.
    """
    p = subprocess.run([find(), *map(str, args)], capture_output=True, text=True)
    if p.returncode not in ok:
        raise RtrecError(_sentence(p.stderr, p.returncode))
    return p.returncode, p.stdout, p.stderr


def _sentence(stderr, code):
    """rtrec's error lines without the ``rtrec: `` prefix."""
    lines = [ln.removeprefix("rtrec: ") for ln in stderr.strip().splitlines() if ln.strip()]
    return "\n".join(lines) or f"rtrec exited with code {code}"


def run_json(args, ok=(0,)):
    """Runs ``rtrec ARGS`` (which print JSON); returns (exit code, document)."""
    code, out, _ = run(args, ok)
    return code, json.loads(out)
