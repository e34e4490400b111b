"""The compiling peers' virtualenvs (torch.compile, jax.jit) under BUILD/bench-venvs/, created and
installed on first use, reused after. A peer that cannot be installed comes back with the reason,
so the report says why instead of the run crashing."""
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional


@dataclass
class Peer:
    name: str                     # "torch.compile", "jax"
    python: Optional[str] = None  # the interpreter to run its script with; None: unavailable
    version: str = ""
    reason: str = ""              # why it is unavailable
    installed_now: bool = False


@dataclass(frozen=True)
class Spec:
    name: str
    folder: str
    probe: str               # python code printing the version when the peer works
    installs: tuple          # pip argument lists, tried in order until one succeeds
    needs: tuple = ()        # programs that must be on PATH


SPECS = [
    # The CPU wheel index first (small); plain PyPI after it (its Linux wheel carries CUDA libraries,
    # several GB, but runs on the CPU too).
    Spec("torch.compile", "torch", "import torch; torch.compile; print(torch.__version__)",
         (["torch", "numpy", "--index-url", "https://download.pytorch.org/whl/cpu", "--retries", "1",
           "--timeout", "20"],
          ["torch", "numpy"]),
         needs=("g++",)),
    Spec("jax", "jax", "import jax; jax.jit; print(jax.__version__)", (["jax[cpu]"],)),
]


def _run(cmd, log, timeout):
    log.write("$ %s\n" % " ".join(cmd))
    log.flush()
    try:
        return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode == 0
    except (OSError, subprocess.TimeoutExpired) as e:
        log.write("%s\n" % e)
        return False


def _probe(python, code):
    """The peer's version, or None with what went wrong."""
    if not os.path.exists(python):
        return None, "no interpreter at %s" % python
    try:
        r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return r.stdout.strip().splitlines()[-1], ""


def _venv_creators():
    """The python3 on PATH first, then Debian's; the first whose `-m venv` works creates the venv."""
    seen = []
    for p in (shutil.which("python3"), "/usr/bin/python3"):
        if p and os.path.realpath(p) not in [os.path.realpath(s) for s in seen]:
            seen.append(p)
    return seen


def _tail(path, lines=3):
    try:
        with open(path) as f:
            return " | ".join(l.strip() for l in f.read().strip().splitlines()[-lines:])
    except OSError:
        return ""


def ensure(spec, root, install=True, timeout=3600):
    """The peer of `spec`, installing it into ROOT/FOLDER first when missing and `install` is set."""
    peer = Peer(spec.name)
    missing = [p for p in spec.needs if not shutil.which(p)]
    if missing:
        peer.reason = "needs %s on PATH" % ", ".join(missing)
        return peer
    venv = os.path.join(root, spec.folder)
    python = os.path.join(venv, "bin", "python")
    version, why = _probe(python, spec.probe)
    if version is None and install:
        log_path = os.path.join(root, spec.folder + "-install.log")
        try:
            os.makedirs(root, exist_ok=True)
            log = open(log_path, "a")
        except OSError as e:
            peer.reason = "cannot write %s: %s" % (root, e)
            return peer
        with log:
            created = os.path.exists(python)
            for creator in _venv_creators():
                if created:
                    break
                created = _run([creator, "-m", "venv", venv], log, 600)
            if not created:
                peer.reason = "could not create a virtualenv (see %s): %s" % (log_path, _tail(log_path))
                return peer
            for args in spec.installs:
                if _run([python, "-m", "pip", "install"] + args, log, timeout):
                    break
        version, why = _probe(python, spec.probe)
        if version is None:
            peer.reason = "install failed (%s; log %s: %s)" % (why, log_path, _tail(log_path))
            return peer
        peer.installed_now = True
    if version is None:
        peer.reason = "not installed (%s); run without --no-install" % why
        return peer
    peer.python, peer.version = python, version
    return peer


def ensure_all(root, install=True):
    return {spec.name: ensure(spec, root, install) for spec in SPECS}
