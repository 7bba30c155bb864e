// The in-sandbox runner for a JavaScript controller: the twin of runner.py, same protocol.
//
// runner.py starts every sandbox: it reads the start message, takes the start-up probes before
// any controller code runs, applies the inner limits, moves the protocol to descriptors 3 and 4
// (stdin becomes /dev/null, stdout becomes stderr, so a controller's console.log cannot corrupt
// a line) and then replaces itself with `node runner.mjs`. The start message and the probes come
// here in PLIMSOLL_START, removed from the environment before the controller is imported.
//
// The controller (/controller/<module>, .mjs or .js) has a default export: a class constructed
// with the course info, or a factory called with it; either gives an object whose step(obs)
// returns a command object. Every line sent here is the one runner.py would send for the same
// commands: {"hello": ..., "ready": N}, then {"tick", "seq", "commands": PACKED, "errors"}.
// This file is as untrusted as the controller it hosts; the host checks every byte it reads back.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const PROTO_IN = 3;
const PROTO_OUT = 4;

// -- codec (the same packing as runner.py's pack/unpack) -----------------------------------------

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v)
    && Object.getPrototypeOf(v) === Object.prototype;
}

function isNumber(v) {
  return typeof v === "number";
}

// JavaScript has one number type: a scalar is a "float" column (runner.py marks Python ints
// "int"; the host reads both as numbers). Anything not flat numbers goes as plain JSON.
export function pack(rows) {
  if (rows.length === 0 || !rows.every(isPlainObject)) return { json: rows };
  const keys = Object.keys(rows[0]);
  const cols = [];
  for (const key of keys) {
    const v = rows[0][key];
    if (Array.isArray(v)) cols.push([key, v.length, "list"]);
    else if (isNumber(v)) cols.push([key, 0, "float"]);
    else return { json: rows };
  }
  const vals = [];
  for (const r of rows) {
    const rk = Object.keys(r);
    if (rk.length !== keys.length || rk.some((k, i) => k !== keys[i])) return { json: rows };
    for (const [key, width, kind] of cols) {
      const v = r[key];
      if (kind === "list") {
        if (!Array.isArray(v) || v.length !== width || !v.every(isNumber)) return { json: rows };
        vals.push(...v);
      } else if (!isNumber(v)) {
        return { json: rows };
      } else {
        vals.push(v);
      }
    }
  }
  const buf = Buffer.alloc(8 * vals.length);
  vals.forEach((x, i) => buf.writeDoubleLE(x, 8 * i));
  return { cols, n: rows.length, f64: buf.toString("base64") };
}

export function unpack(packed) {
  if (!isPlainObject(packed)) throw new Error("not an object");
  if ("json" in packed) {
    if (!Array.isArray(packed.json)) throw new Error("json batch is not a list");
    return packed.json;
  }
  const { cols, n, f64 } = packed;
  let width = 0;
  for (const c of cols) width += c[2] === "list" ? c[1] : 1;
  const data = Buffer.from(f64, "base64");
  if (data.length !== 8 * n * width) throw new Error("f64 has the wrong length");
  const rows = [];
  let pos = 0;
  for (let r = 0; r < n; r++) {
    const row = {};
    for (const [key, w, kind] of cols) {
      if (kind === "list") {
        const list = [];
        for (let j = 0; j < w; j++) list.push(data.readDoubleLE(8 * pos++));
        row[key] = list;
      } else {
        row[key] = data.readDoubleLE(8 * pos++);
      }
    }
    rows.push(row);
  }
  return rows;
}

// -- lines ---------------------------------------------------------------------------------------

let pending = Buffer.alloc(0);
const chunk = Buffer.alloc(1 << 16);

function readLine() {
  for (;;) {
    const nl = pending.indexOf(10);
    if (nl >= 0) {
      const line = pending.subarray(0, nl);
      pending = pending.subarray(nl + 1);
      return line.toString("utf8");
    }
    let got;
    try {
      got = fs.readSync(PROTO_IN, chunk, 0, chunk.length, null);
    } catch (e) {
      if (e.code === "EAGAIN" || e.code === "EINTR") continue;
      throw e;
    }
    if (got === 0) return null;
    pending = Buffer.concat([pending, chunk.subarray(0, got)]);
  }
}

// Python's json.dumps(allow_nan=True) writes NaN and Infinity bare; JSON.stringify would write
// null, so non-finite numbers go through a placeholder first.
const NONFINITE = /"\u0000(NaN|Infinity|-Infinity)\u0000"/g;

function dumps(obj) {
  const text = JSON.stringify(obj, (k, v) => (typeof v === "number" && !Number.isFinite(v)
    ? `\u0000${v}\u0000` : v));
  return text.replace(NONFINITE, "$1");
}

function send(obj) {
  const data = Buffer.from(dumps(obj) + "\n", "utf8");
  let off = 0;
  while (off < data.length) {
    try {
      off += fs.writeSync(PROTO_OUT, data, off, data.length - off);
    } catch (e) {
      if (e.code !== "EAGAIN" && e.code !== "EINTR") throw e;
    }
  }
}

function describe(e) {
  let text;
  try {
    text = e instanceof Error ? `${e.name}: ${e.message}` : `thrown: ${String(e)}`;
  } catch {
    text = "thrown: (unprintable)";
  }
  return text.length <= 300 ? text : `${text.slice(0, 297)}...`;
}

// -- the controller ------------------------------------------------------------------------------

function isClass(fn) {
  try {
    return /^class[\s{]/.test(Function.prototype.toString.call(fn));
  } catch {
    return false;
  }
}

async function factoryOf(file) {
  const mod = await import(pathToFileURL(file).href);
  const made = mod.default ?? mod.Controller;
  if (typeof made !== "function") {
    throw new TypeError("the module's default export is not a class or a factory function");
  }
  return (course) => {
    const c = isClass(made) ? new made(course) : made(course);
    if (c === null || typeof c !== "object" || typeof c.step !== "function") {
      throw new TypeError("the constructed controller has no step(obs) method");
    }
    return c;
  };
}

function stepAll(controllers, msg, errors) {
  const obs = unpack(msg.obs);
  for (const gone of msg.drop ?? []) controllers.delete(gone);
  const commands = [];
  msg.ids.forEach((id, k) => {
    try {
      commands.push(controllers.get(id).step(obs[k]));
    } catch (e) {
      errors[String(id)] = describe(e);
      commands.push(null);
    }
  });
  return commands;
}

function reply(msg, ids, commands, errors) {
  try {
    send({ tick: msg.tick, seq: msg.seq ?? null, commands: pack(commands), errors });
  } catch (e) {
    // A command JSON cannot carry: send what can be said, the host ends those flights.
    const safe = commands.map((c, k) => {
      try {
        dumps(c);
        return c === undefined ? null : c;
      } catch {
        errors[String(ids[k])] ??= `command not JSON-serialisable (${describe(e)})`;
        return null;
      }
    });
    send({ tick: msg.tick, seq: msg.seq ?? null, commands: { json: safe }, errors });
  }
}

async function main() {
  const given = JSON.parse(process.env.PLIMSOLL_START ?? "{}");
  delete process.env.PLIMSOLL_START;
  const { start, hello } = given;
  hello.runtime = `node ${process.version}`;
  const code = start.path ?? "/controller";
  let controllers;
  try {
    process.chdir(code);
    const make = await factoryOf(path.join(code, start.module));
    controllers = new Map();
    for (let i = 0; i < Number(start.flights); i++) controllers.set(i, make(start.course));
  } catch (e) {
    send({ hello, fatal: describe(e) });
    return 4;
  }
  send({ hello, ready: controllers.size });
  for (;;) {
    const line = readLine();
    if (line === null) return 0;
    const msg = JSON.parse(line);
    if (msg.end) return 0;
    const errors = {};
    const commands = stepAll(controllers, msg, errors);
    reply(msg, msg.ids, commands, errors);
  }
}

process.exitCode = await main();
// Timers or handles a controller left behind must not keep a finished sandbox alive.
process.exit(process.exitCode);
