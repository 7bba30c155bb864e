// Recompute every digest of a plimsoll-ci bundle with an independent RFC 8785 implementation
// (npm `canonicalize`) and Node's own JSON and SHA-256. Prints one JSON object per bundle line.
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const canonicalize = require("canonicalize");

const sha256 = (bytes) => crypto.createHash("sha256").update(bytes).digest("hex");
const lines = fs.readFileSync(process.argv[2]).toString("utf8").split("\n").filter((x) => x);
for (const raw of lines) {
  const doc = JSON.parse(raw);
  const payload = Buffer.from(doc.envelope.payload, "base64").toString("utf8");
  const statement = JSON.parse(payload);
  const out = {
    kind: doc.kind,
    line_is_jcs: canonicalize(doc) === raw,
    payload_is_jcs: canonicalize(statement) === payload,
    subject: statement.subject[0].digest.sha256,
  };
  if (doc.kind === "record") {
    out.result_sha256 = sha256(Buffer.from(canonicalize(doc.result), "utf8"));
    out.predicate_result = statement.predicate.result.sha256;
  }
  console.log(JSON.stringify(out));
}
