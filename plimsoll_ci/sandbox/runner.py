"""The in-sandbox runner: speaks the controller protocol for an untrusted controller.

This file is copied alone into every sandbox (`/plimsoll/runner.py`) and run there with the
standard library only (`python3 -I -B /plimsoll/runner.py`). It is as untrusted as the controller
it hosts: the controller shares its process and can rewrite anything here. The trusted side
therefore checks every byte it reads back, measures CPU from outside, and sends nothing the
controller may not see: no seed, no hidden flight parameter, only course info and observations.

Protocol (one JSON object per line each way; the host's module imports the codec below):

    host   -> runner  {"start": {"course": {...}, "module": "controller", "canary": "/host/path",
                                 "flights": N, "limits": {"memory": bytes, "nproc": n}}}
    runner -> host    {"hello": {probes seen before the controller was imported},
                       "ready": N}            or    {"hello": {...}, "fatal": "what failed"}
    host   -> runner  {"tick": k, "seq": n, "ids": [flight ids], "obs": PACKED, "drop": [ended]}
    runner -> host    {"tick": k, "seq": n, "commands": PACKED, "errors": {"<id>": "detail"}}

One line per tick carries every flight of a batch (`seq` numbers the lines). Optionally a batch
is flown as two halves whose lines alternate, so the simulator steps one half while the sandbox
computes the other's commands; `drop` names flights that ended, so their controllers are freed.
    host   -> runner  {"end": true}

PACKED is a batch of dicts (observations or commands) either as plain JSON (`{"json": [...]}`)
or, when every dict has the same keys and number-valued fields, as little-endian float64 columns
(`{"cols": [[key, width], ...], "f64": base64}`, width 0 = scalar, `"int"` marks integer columns):
exact, and far cheaper than printing thousands of floats per tick.
"""

from __future__ import annotations

import base64
import json
import math
import os
import struct
import sys

# -- codec (also imported by the trusted side) ---------------------------------------------------


def pack(rows: list) -> dict:
    """Pack a list of flat dicts of numbers / lists of numbers; anything else goes as plain JSON."""
    if not rows or not all(type(r) is dict for r in rows):
        return {"json": rows}
    first = rows[0]
    cols = []
    for key in first:
        v = first[key]
        if type(v) is list:
            cols.append([key, len(v), "list"])
        elif type(v) is int:
            cols.append([key, 0, "int"])
        elif type(v) is float:
            cols.append([key, 0, "float"])
        else:
            return {"json": rows}
    keys = list(first)
    vals: list = []
    for r in rows:
        if list(r) != keys:
            return {"json": rows}
        for key, width, kind in cols:
            v = r[key]
            if kind == "list":
                if type(v) is not list or len(v) != width:
                    return {"json": rows}
                for x in v:
                    if type(x) is not float and type(x) is not int:
                        return {"json": rows}
                vals.extend(v)
            elif type(v) is not (int if kind == "int" else float):
                return {"json": rows}
            elif kind == "int" and not -(2**53) < v < 2**53:
                return {"json": rows}
            else:
                vals.append(v)
    # Lists keep their element types only as floats; ints inside lists become floats (exact).
    data = struct.pack(f"<{len(vals)}d", *vals)
    return {"cols": cols, "n": len(rows), "f64": base64.b64encode(data).decode("ascii")}


class PackError(ValueError):
    """A packed batch that does not decode; the message says why (never echoes the payload)."""


def unpack(packed: object, max_rows: int = 1 << 16) -> list:
    """Inverse of `pack`; raises PackError on anything malformed."""
    if type(packed) is not dict:
        raise PackError("not an object")
    if "json" in packed:
        rows = packed["json"]
        if type(rows) is not list:
            raise PackError("json batch is not a list")
        return rows
    try:
        cols, n, blob = packed["cols"], packed["n"], packed["f64"]
    except KeyError as e:
        raise PackError(f"missing field {e.args[0]!r}") from None
    if type(n) is not int or not 0 <= n <= max_rows or type(cols) is not list or not cols:
        raise PackError("bad row count or columns")
    width_total = 0
    for c in cols:
        if (type(c) is not list or len(c) != 3 or type(c[0]) is not str or type(c[1]) is not int
                or not 0 <= c[1] <= 64 or c[2] not in ("list", "int", "float")):
            raise PackError("bad column description")
        width_total += c[1] if c[2] == "list" else 1
    if type(blob) is not str:
        raise PackError("f64 is not a string")
    try:
        data = base64.b64decode(blob, validate=True)
    except (ValueError, TypeError):
        raise PackError("f64 is not base64") from None
    if len(data) != 8 * n * width_total:
        raise PackError(f"f64 holds {len(data)} bytes, expected {8 * n * width_total}")
    vals = struct.unpack(f"<{n * width_total}d", data)
    rows = []
    pos = 0
    for _ in range(n):
        row: dict[str, object] = {}
        for key, width, kind in cols:
            if kind == "list":
                row[key] = list(vals[pos:pos + width])
                pos += width
            elif kind == "int":
                x = vals[pos]
                if not math.isfinite(x) or x != int(x):
                    raise PackError("an integer column holds a non-integer")
                row[key] = int(x)
                pos += 1
            else:
                row[key] = vals[pos]
                pos += 1
        rows.append(row)
    return rows


# -- start-up checks (run before the controller is imported) --------------------------------------


def _kernel_log() -> str:
    """The kernel log as the sandbox's kernel hands it out (syslog(2) READ_ALL), first lines only."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(1 << 16)
        n = libc.klogctl(3, buf, len(buf))  # SYSLOG_ACTION_READ_ALL
        if n < 0:
            return f"unreadable (errno {ctypes.get_errno()})"
        return buf.raw[:n].decode("utf-8", "replace")
    except Exception as e:  # noqa: BLE001 - every failure is itself evidence
        return f"unreadable ({type(e).__name__})"


def _mounts() -> dict:
    """Mount point -> options, as the sandbox's kernel lists them (last mount wins)."""
    out = {}
    try:
        with open("/proc/self/mounts") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 4:
                    out[parts[1]] = parts[3]
    except OSError:
        pass
    return out


def probes(canary: str, code: str = "/controller") -> dict:
    """What the sandbox looks like from inside, seen before any controller code runs."""
    out: dict = {}
    log = _kernel_log()
    out["kernel_log_head"] = "\n".join(log.splitlines()[:3])[:400]
    out["gvisor_banner"] = "gVisor" in log
    try:
        with open("/proc/version") as fh:
            out["proc_version"] = fh.read().strip()[:200]
    except OSError as e:
        out["proc_version"] = f"unreadable ({e.strerror})"
    try:
        import socket

        out["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    except OSError as e:
        out["interfaces"] = [f"unlistable ({e.strerror})"]
    mounts = _mounts()
    out["mounts"] = {m: mounts[m] for m in ("/", code, "/plimsoll", "/tmp") if m in mounts}
    try:
        flag_ro = bool(os.statvfs("/").f_flag & os.ST_RDONLY)
    except OSError:
        flag_ro = False
    out["root_readonly"] = flag_ro or "ro" in mounts.get("/", "").split(",")
    out["code_readonly"] = "ro" in mounts.get(code, mounts.get("/", "")).split(",")
    writes = {}
    for place in ("/", code, os.path.dirname(os.path.abspath(__file__)), sys.prefix, "/dev/shm"):
        probe = os.path.join(place, ".plimsoll-write-probe")
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as e:
            writes[place] = f"refused ({os.strerror(e.errno) if e.errno else e})"
        else:
            os.close(fd)
            try:
                os.unlink(probe)
            except OSError:
                pass
            writes[place] = "writable"
    out["writes"] = writes
    try:
        with open(canary, "rb") as fh:
            fh.read(64)
        out["canary"] = "readable"
    except OSError as e:
        out["canary"] = f"unreadable ({os.strerror(e.errno) if e.errno else e})"
    out["uid"] = os.getuid()
    out["pid"] = os.getpid()
    try:
        import resource

        out["rlimits"] = {name: resource.getrlimit(getattr(resource, name))[0]
                          for name in ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_NOFILE")}
    except Exception:  # noqa: BLE001
        out["rlimits"] = {}
    return out


def _limit(limits: dict) -> None:
    """Inner limits on top of the sandbox's own: a failed allocation is a MemoryError here."""
    try:
        import resource
    except ImportError:
        return
    for name, key in (("RLIMIT_AS", "memory"), ("RLIMIT_NPROC", "nproc"),
                      ("RLIMIT_FSIZE", "fsize"), ("RLIMIT_NOFILE", "nofile")):
        value = limits.get(key)
        if type(value) is int and value > 0:
            try:
                resource.setrlimit(getattr(resource, name), (value, value))
            except (ValueError, OSError):
                pass
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        pass


def _describe(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 300 else text[:297] + "..."


# -- a JavaScript controller: node takes over this process ---------------------------------------


def _node() -> str | None:
    """The runtime's node (the sandbox's /usr/local/bin/node), else one on PATH."""
    import shutil

    inside = os.path.join(sys.prefix, "bin", "node")
    return inside if os.access(inside, os.X_OK) else shutil.which("node")


def _exec_node(start: dict, hello: dict, proto_in, proto_out) -> int:
    """Replace this process with `node runner.mjs`: the probes are taken, the same inner limits
    are set (the address space with 1 GiB more, which V8 reserves beyond what it uses; its heap
    is bounded by --max-old-space-size at half the memory), and the protocol moves to
    descriptors 3 and 4."""
    def fail(why: str) -> int:
        proto_out.write(json.dumps({"hello": hello, "fatal": why}).encode() + b"\n")
        return 4

    node = _node()
    runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.mjs")
    if node is None:
        return fail("no node in this sandbox's runtime: install nodejs on the host "
                    "(apt-get install nodejs) and run again; the runtime is rebuilt with it")
    if not os.path.isfile(runner):
        return fail("runner.mjs is missing beside runner.py")
    limits = dict(start.get("limits", {}))
    memory = limits.get("memory", 0)
    if type(memory) is int and memory > 0:
        # V8 reserves address space it never touches: the bound on it keeps 1 GiB of headroom
        # (a sandbox without a memory cgroup is still bounded), the heap gets half the memory.
        limits["memory"] = memory + (1 << 30)
    _limit(limits)
    heap = max(64, memory // (2 << 20)) if type(memory) is int and memory > 0 else 512
    fd_in, fd_out = os.dup(proto_in.fileno()), os.dup(proto_out.fileno())  # both above 4
    os.dup2(fd_in, 3)  # dup2 makes them inheritable
    os.dup2(fd_out, 4)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env["PLIMSOLL_START"] = json.dumps({"start": start, "hello": hello})
    try:
        os.execve(node, [node, f"--max-old-space-size={heap}", runner], env)
    except OSError as e:
        return fail(f"node did not start ({_describe(e)})")
    return 4  # pragma: no cover - execve does not return


# -- the loop --------------------------------------------------------------------------------------


def main() -> int:
    """Run the protocol on the original stdin/stdout; the controller gets stderr as its stdout."""
    proto_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # a controller's print() must not corrupt the protocol
    sys.stdout = sys.stderr

    def send(obj: dict) -> None:
        # An unbuffered write may be short (gVisor's pipes take 64 KiB at a time): write it all.
        data = memoryview(json.dumps(obj, separators=(",", ":"), allow_nan=True).encode() + b"\n")
        while data:
            data = data[proto_out.write(data):]

    line = proto_in.readline()
    if not line:
        return 3
    start = json.loads(line)["start"]
    code = start.get("path", "/controller")
    hello = probes(start.get("canary", "/nonexistent"), code)
    if start.get("runtime") == "node":
        return _exec_node(start, hello, proto_in, proto_out)
    _limit(start.get("limits", {}))
    # numpy sits in the runtime's site-packages, which Debian's site.py does not add by itself.
    site = os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                        "site-packages")
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)
    sys.path.insert(0, code)
    os.chdir(code)
    try:
        import importlib

        module = importlib.import_module(start.get("module", "controller"))
        factory = module.Controller
        course = start["course"]
        controllers = {i: factory(course) for i in range(int(start["flights"]))}
    except BaseException as e:  # noqa: BLE001 - a failed import is reported, not raised
        send({"hello": hello, "fatal": _describe(e)})
        return 4
    send({"hello": hello, "ready": len(controllers)})
    del line
    while True:
        line = proto_in.readline()
        if not line:
            return 0
        msg = json.loads(line)
        if msg.get("end"):
            return 0
        ids = msg["ids"]
        obs = unpack(msg["obs"])
        for gone in msg.get("drop", ()):
            controllers.pop(gone, None)  # that flight ended: free its controller
        commands = []
        errors = {}
        for i, o in zip(ids, obs, strict=False):
            try:
                commands.append(controllers[i].step(o))
            except Exception as e:  # noqa: BLE001 - the flight ends, the batch goes on
                errors[str(i)] = _describe(e)
                commands.append(None)
        try:
            packed = pack(commands)
            send({"tick": msg["tick"], "seq": msg.get("seq"), "commands": packed,
                  "errors": errors})
        except (TypeError, ValueError) as e:
            # A command JSON cannot carry: send what can be said, the host ends those flights.
            safe = []
            for i, c in zip(ids, commands, strict=False):
                try:
                    json.dumps(c, allow_nan=True)
                    safe.append(c)
                except (TypeError, ValueError):
                    errors.setdefault(str(i), f"command not JSON-serialisable ({_describe(e)})")
                    safe.append(None)
            send({"tick": msg["tick"], "seq": msg.get("seq"), "commands": {"json": safe},
                  "errors": errors})


if __name__ == "__main__":
    sys.exit(main())
