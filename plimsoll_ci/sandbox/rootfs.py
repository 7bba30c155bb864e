"""The minimal runtime every sandbox starts from: built locally, never pulled.

No registry is reachable where gradings run, so the root filesystem is assembled from the host's
own Python: the interpreter, the standard library (without tests, IDLE, Tk), numpy, pytest with the
distributions it requires (for the eval harness's guarded tests; left out when the host has no
pytest), the host's `node` when it has one (JavaScript controllers; Debian's `nodejs` package),
and exactly the shared libraries `ldd` says they all need. `/usr/local/bin` holds `python3`,
`python`, `node`, `npm` (a node script; npm's package folder is copied at its own path) and a
`pytest` script, and no shell. The same folder is the read-only root of the gVisor
OCI bundle and, packed as a deterministic tarball, the `docker import`ed image.

    python3 -m plimsoll_ci.sandbox.rootfs [--docker-import] [--print-path]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import SandboxError

FORMAT = "plimsoll-rootfs/2"
IMAGE_REPO = "plimsoll-python"
# Inside the sandbox: where the interpreter and its library live (prefix found from the binary).
PREFIX = "/usr/local"
# Mount points the providers bind into; they must exist in a read-only root.
MOUNT_POINTS = ("proc", "dev", "sys", "tmp", "controller", "plimsoll", "etc", "repo")
# Distributions copied from the host's site-packages with everything they require (the eval
# harness's guarded test commands run pytest inside the sandbox).
EXTRA_DISTRIBUTIONS = ("pytest",)
_STDLIB_SKIP = {
    "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages",
    "dist-packages", "pydoc_data", "venv", "unittest/test",
}
_NUMPY_SKIP = re.compile(r"(^|/)(tests|testing/_private/?$)(/|$)")


class Rootfs(NamedTuple):
    """A built root filesystem: its folder, its tarball, and the content key both are named by."""

    path: Path
    tarball: Path
    key: str
    python: str  # the interpreter's path inside the root

    @property
    def image(self) -> str:
        """The docker image tag this root is imported as."""
        return f"{IMAGE_REPO}:{self.key[:16]}"


def cache_dir() -> Path:
    """Where built roots live: $PLIMSOLL_CACHE, else ~/.cache/plimsoll-ci."""
    base = os.environ.get("PLIMSOLL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "plimsoll-ci")
    return Path(base) / "rootfs"


def _numpy_dirs() -> list[Path]:
    try:
        import numpy
    except ImportError as e:  # pragma: no cover - numpy is a dependency
        raise SandboxError(f"numpy is not importable ({e}); install plimsoll-ci's dependencies") from e
    pkg = Path(numpy.__file__).resolve().parent
    out = [pkg]
    libs = pkg.parent / "numpy.libs"
    if libs.is_dir():
        out.append(libs)
    return out


def _distributions(wanted: tuple[str, ...] = EXTRA_DISTRIBUTIONS) -> list:
    """The installed distributions `wanted` names and every one they require on this host
    (environment markers evaluated, extras not followed), by name; missing ones are left out."""
    import importlib.metadata as md

    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # no packaging means no pytest either: nothing to copy
        return []
    found: dict[str, md.Distribution] = {}
    todo = list(wanted)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        found[key] = dist
        for text in dist.requires or []:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return [found[k] for k in sorted(found)]


@functools.lru_cache(maxsize=1)
def _key() -> str:
    """The content key: the interpreter, numpy, the extra distributions and this builder (read
    once per process; every sandbox start asks for it)."""
    import numpy

    h = hashlib.sha256()
    for part in (FORMAT, sys.version, os.path.realpath(sys.executable), numpy.__version__,
                 numpy.__file__, Path(__file__).read_text(), _node_identity()):
        h.update(part.encode() + b"\0")
    for dist in _distributions():  # a new pytest (or one installed later) makes a new root
        h.update(f"{dist.metadata['Name']}=={dist.version}@{dist.locate_file('')}".encode() + b"\0")
    return h.hexdigest()


def node_path() -> str | None:
    """The host's node executable (resolved), which the root carries for JavaScript controllers;
    None when the host has none (then the root carries Python only)."""
    found = shutil.which("node") or shutil.which("nodejs")
    return os.path.realpath(found) if found else None


def npm_root() -> Path | None:
    """The host's npm package folder (holding bin/npm-cli.js), or None: the root carries it, and
    an `npm` script run by node, so the eval harness's allowlisted `npm` runs in a sandbox."""
    found = shutil.which("npm")
    if not found or node_path() is None:
        return None
    root = Path(os.path.realpath(found)).parent.parent
    return root if (root / "bin" / "npm-cli.js").is_file() else None


def _node_identity() -> str:
    """Names the host's node and npm by path, size and time (one installed or upgraded later
    makes a new root)."""
    node = node_path()
    if node is None:
        return "node: none"
    st = os.stat(node)
    npm = npm_root()
    seen = os.stat(npm / "package.json").st_mtime_ns if npm else 0
    return f"node: {node} {st.st_size} {st.st_mtime_ns}; npm: {npm} {seen}"


def _copy_npm(work: Path, bindir: Path, say) -> None:
    """npm's package folder at its own path, and `npm` in bin: a node script (no shell)."""
    root = npm_root()
    if root is None:
        return
    # Debian's npm keeps its dependencies beside it (/usr/share/nodejs/<name>), not inside it:
    # then the whole folder of packages goes, with node's other Debian package folders.
    folders = [root] if (root / "node_modules").is_dir() else [
        root.parent, *(p for p in (Path("/usr/lib/nodejs"),
                                   Path(f"/usr/lib/{sysconfig.get_config_var('MULTIARCH')}/nodejs"))
                       if p.is_dir())]
    for folder in folders:
        _copy_tree(folder, work / str(folder).lstrip("/"), lambda rel: False)
    script = bindir / "npm"
    script.write_text(f"#!{PREFIX}/bin/node\nrequire({json.dumps(str(root / 'bin' / 'npm-cli.js'))});\n")
    script.chmod(0o755)
    say(f"rootfs: npm from {root}")


def _ldd(paths: list[Path]) -> set[str]:
    """Every shared library the given ELF files load, by the path the loader resolves."""
    libs: set[str] = set()
    for chunk in range(0, len(paths), 200):
        batch = [str(p) for p in paths[chunk:chunk + 200]]
        out = subprocess.run(["ldd", *batch], capture_output=True, text=True).stdout
        for line in out.splitlines():
            line = line.strip()
            m = re.match(r"\S+ => (/\S+) \(", line) or re.match(r"(/\S+) \(", line)
            if m:
                libs.add(m.group(1))
    return libs


def _copy_tree(src: Path, dst: Path, skip) -> list[Path]:
    """Copy src to dst (files and symlinks), skipping relative paths `skip` says; return ELF files."""
    elves = []
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        rel_root = "" if rel_root == "." else rel_root
        dirs[:] = [d for d in dirs if not skip(os.path.join(rel_root, d))]
        (dst / rel_root).mkdir(parents=True, exist_ok=True)
        for name in files:
            rel = os.path.join(rel_root, name)
            if skip(rel):
                continue
            s, d = Path(root) / name, dst / rel
            if s.is_symlink():
                os.symlink(os.readlink(s), d)
                continue
            shutil.copy2(s, d)
            if ".so" in name:
                elves.append(s)
    return elves


def build(dest: Path | None = None, *, log=None) -> Rootfs:
    """Build (or reuse) the root filesystem and its tarball; returns where they are."""
    say = log or (lambda msg: None)
    key = _key()
    base = dest or cache_dir()
    root = base / key[:16]
    tarball = base / f"{key[:16]}.tar"
    python_inside = f"{PREFIX}/bin/python3"
    if (root / ".complete").exists() and tarball.exists():
        say(f"rootfs: reusing {root}")
        return Rootfs(root, tarball, key, python_inside)
    started = time.monotonic()
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{key[:16]}.", dir=base))
    work.chmod(0o755)  # mkdtemp makes 0700; the sandbox user must traverse the root
    try:
        _assemble(work, say)
        (work / ".complete").write_text(key + "\n")
        try:
            os.replace(work, root)
        except OSError:
            if not (root / ".complete").exists():
                raise
            shutil.rmtree(work, ignore_errors=True)  # another build finished first: use its copy
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    _write_tarball(root, tarball)
    say(f"rootfs: built {root} and {tarball.name} in {time.monotonic() - started:.1f} s")
    return Rootfs(root, tarball, key, python_inside)


def _assemble(work: Path, say) -> None:
    exe = Path(os.path.realpath(sys.executable))
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    pyver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    say(f"rootfs: interpreter {exe}, standard library {stdlib}")
    bindir = work / PREFIX.lstrip("/") / "bin"
    bindir.mkdir(parents=True)
    shutil.copy2(exe, bindir / pyver)
    os.symlink(pyver, bindir / "python3")
    libdir = work / PREFIX.lstrip("/") / "lib" / pyver

    def skip_std(rel: str) -> bool:
        rel = rel.replace(os.sep, "/")
        return rel in _STDLIB_SKIP or rel.startswith("config-") or rel.endswith((".a", ".exe"))

    elves = [exe] + _copy_tree(stdlib, libdir, skip_std)
    # lib-dynload may live apart from the stdlib (Debian keeps it inside; some builds do not).
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")
    if dynload.is_dir() and not (libdir / "lib-dynload").exists():
        elves += _copy_tree(dynload, libdir / "lib-dynload", lambda rel: False)
    site = libdir / "site-packages"
    copied = [str(stdlib), str(dynload.resolve())]
    for src in _numpy_dirs():
        copied.append(str(src))
        say(f"rootfs: numpy from {src}")
        elves += _copy_tree(src, site / src.name,
                            lambda rel: bool(_NUMPY_SKIP.search(rel.replace(os.sep, "/"))))
    for dist in _distributions():
        say(f"rootfs: {dist.metadata['Name']} {dist.version} from {dist.locate_file('')}")
        elves += _copy_distribution(dist, site)
    node = node_path()
    if node is not None:  # JavaScript controllers: the binary and (below) the libraries it loads
        shutil.copy2(node, bindir / "node")
        elves.append(Path(node))
        say(f"rootfs: node from {node}")
        _copy_npm(work, bindir, say)
    libs = _ldd(elves)
    for lib in sorted(libs):
        target = work / lib.lstrip("/")
        real = os.path.realpath(lib)
        if target.exists() or any(real.startswith(d + os.sep) for d in copied):
            continue  # already in the root, found through its RPATH ($ORIGIN) there
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(lib), target)
    say(f"rootfs: {len(libs)} shared libraries from ldd")
    for d in MOUNT_POINTS:
        (work / d).mkdir(exist_ok=True)
    (work / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/false\n"
                                         "nobody:x:65534:65534:nobody:/:/bin/false\n")
    (work / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
    os.symlink("python3", bindir / "python")
    if (site / "pytest").is_dir():
        script = bindir / "pytest"
        script.write_text(f"#!{PREFIX}/bin/python3\nimport sys\n\nfrom pytest import console_main\n\n"
                          "sys.exit(console_main())\n")
        script.chmod(0o755)
    # /bin/sh is deliberately absent: the runner needs no shell and a controller gets none.


def _copy_distribution(dist, site: Path) -> list[Path]:
    """Copy the files an installed distribution's RECORD lists under its site-packages (never
    its scripts in ../bin: the root has its own); return the ELF files among them."""
    base = Path(dist.locate_file("")).resolve()
    elves = []
    for rel in dist.files or []:
        src = Path(dist.locate_file(rel))
        try:
            inside = src.resolve().relative_to(base)
        except ValueError:
            continue  # a console script or data file outside site-packages
        if not src.is_file():
            continue
        dst = site / inside
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        if ".so" in src.name:
            elves.append(src)
    return elves


def _write_tarball(root: Path, tarball: Path) -> None:
    """A deterministic tarball (sorted, mtime 0, root-owned) so the same root gives the same image.

    Written under a name of this call's own, then renamed: runs that build it at once (shards on
    one machine, a first run's parallel workers) each write whole bytes, the same ones."""
    fd, name = tempfile.mkstemp(prefix=f"{tarball.name}.", suffix=".part", dir=tarball.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        tmp.chmod(0o644)  # as a plain create would make it (mkstemp makes 0600)
        _tar(root, tmp)
        os.replace(tmp, tarball)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _tar(root: Path, tmp: Path) -> None:
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                full = Path(dirpath) / name
                rel = full.relative_to(root).as_posix()
                if rel == ".complete":
                    continue
                info = tar.gettarinfo(str(full), arcname=rel)
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                if info.isfile():
                    with open(full, "rb") as fh:
                        tar.addfile(info, fh)
                else:
                    tar.addfile(info)
        info = tarfile.TarInfo(".plimsoll-rootfs")
        data = (FORMAT + "\n").encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def docker_import(rootfs: Rootfs, *, log=None) -> str:
    """Import the tarball as a local docker image (skipped when the tag exists); returns the tag."""
    say = log or (lambda msg: None)
    import docker

    client = docker.from_env()
    try:
        client.images.get(rootfs.image)
        say(f"image: {rootfs.image} already present")
        return rootfs.image
    except docker.errors.ImageNotFound:
        pass
    started = time.monotonic()
    # The file itself is the request body: sent in blocks as it is read, never held whole (the
    # tarball is about 160 MB).
    client.api.import_image_from_file(str(rootfs.tarball), repository=IMAGE_REPO,
                                      tag=rootfs.key[:16])
    client.images.get(rootfs.image)
    say(f"image: imported {rootfs.image} in {time.monotonic() - started:.1f} s")
    return rootfs.image


def main(argv: list[str] | None = None) -> int:
    """Build the root filesystem (and optionally import it into docker); print where it is."""
    parser = argparse.ArgumentParser(prog="python3 -m plimsoll_ci.sandbox.rootfs",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--docker-import", action="store_true", help="also import it into docker")
    parser.add_argument("--print-path", action="store_true", help="print only the folder's path")
    args = parser.parse_args(argv)

    def log(msg: str) -> None:
        if not args.print_path:
            print(msg, flush=True)

    rootfs = build(log=log)
    if args.docker_import:
        docker_import(rootfs, log=log)
    print(rootfs.path if args.print_path else f"rootfs: {rootfs.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
