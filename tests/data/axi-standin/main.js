#!/usr/bin/env node
// A stand-in of the test suite's own for gitea-axi's entry point (dist/main.js, run
// through an npm-style symlink): it reads gitea-axi's variables, lists the repository's
// issues with Node's fetch (User-Agent `node`), and without GITEA_AXI_API_URL fails as
// gitea-axi does when it falls back to a tea that is not installed.
const args = process.argv.slice(2);
if (args[0] === "--version") {
  console.log("gitea-axi-standin 0.0.1");
  process.exit(0);
}
const base = (process.env.GITEA_AXI_API_URL || "").replace(/\/+$/, "").replace(/\/api\/v1$/, "");
if (!base) {
  console.log("error: TEA_NOT_INSTALLED (no GITEA_AXI_API_URL, and no tea on PATH)");
  process.exit(1);
}
const repo = process.env.GITEA_AXI_REPO;
fetch(`${base}/api/v1/repos/${repo}/issues?state=all&type=issues&limit=50`,
      {headers: {Authorization: `token ${process.env.GITEA_AXI_TOKEN || ""}`}})
  .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
  .then((issues) => {
    console.log(`count: ${issues.length} of ${issues.length} total`);
    for (const issue of issues) console.log(`${issue.number},${issue.title}`);
  })
  .catch((e) => {
    console.log(`error: ${e.message}`);
    process.exit(1);
  });
