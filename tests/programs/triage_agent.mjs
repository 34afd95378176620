// The same agent in JavaScript, as `node triage_agent.mjs [--keyed]`: Node's own fetch and fs, nothing of crashlab's.
// It files two issues and comments on the first through the service at CRASHLAB_TRACKER_URL, keeping its
// progress in progress.json in its working directory, replaced whole with fsyncs after each step.
import { randomUUID } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";

const STEPS = [["A", "issue", "Login fails on Safari"], ["B", "issue", "Export times out"],
  ["C", "comment", "Same root cause as the export timeout"]];
const keyed = process.argv.slice(2).includes("--keyed");

async function post(path, payload, key) {
  const headers = { "Content-Type": "application/json", ...(key ? { "Idempotency-Key": key } : {}) };
  const answer = await fetch(process.env.CRASHLAB_TRACKER_URL + path,
    { method: "POST", headers, body: JSON.stringify(payload) });
  if (!answer.ok) throw new Error(`${path}: ${answer.status} ${await answer.text()}`);
  return (await answer.json()).number;
}

function save(progress) {
  const file = openSync("progress.tmp", "w");
  writeSync(file, JSON.stringify(progress));
  fsyncSync(file);
  closeSync(file);
  renameSync("progress.tmp", "progress.json");
  const folder = openSync(".", "r");
  fsyncSync(folder);
  closeSync(folder);
}

let progress;
if (existsSync("progress.json")) {
  progress = JSON.parse(readFileSync("progress.json", "utf8"));
} else {
  progress = { run: randomUUID(), done: {} };
  save(progress);
}
for (const [step, kind, text] of STEPS) {
  if (step in progress.done) continue;
  const key = keyed ? `${progress.run}:${step}` : null;
  progress.done[step] = kind === "issue"
    ? await post("/issues", { title: text, body: "" }, key)
    : await post(`/issues/${progress.done.A}/comments`, { body: text }, key);
  save(progress);
}
