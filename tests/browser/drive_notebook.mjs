// Drive JupyterLab in headless Chromium: open a notebook, run all cells, wait for the rlm widgets, report.
// Usage: node drive_notebook.mjs <config.json>; prints one JSON line with what the page showed.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const userDataDir = mkdtempSync(join(tmpdir(), "rlm-chromium-"));
const log = (...a) => console.error("[drive]", ...a);

const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: cfg.chromium || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
  ],
});
// Only loopback: any other request is a bug in the test set-up, so refuse it.
await context.route(/^(?!https?:\/\/(127\.0\.0\.1|localhost)[:/]).*/, (route) => route.abort());

const result = { ok: false };
const page = context.pages()[0] || (await context.newPage());
page.on("pageerror", (e) => log("pageerror", String(e)));
try {
  await page.goto(cfg.url, { waitUntil: "domcontentloaded", timeout: 60000 });
  await page.waitForFunction(() => window.jupyterapp !== undefined, null, { timeout: 60000 });
  await page.waitForSelector(".jp-Notebook .jp-Cell", { timeout: 60000 });
  // Wait until the kernel is connected and idle before running anything.
  await page.waitForFunction(
    () => {
      const w = window.jupyterapp.shell.currentWidget;
      const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
      return k && k.connectionStatus === "connected" && k.status === "idle";
    },
    null,
    { timeout: 90000 },
  );
  await page.waitForTimeout(1000); // let the widget manager open its control comm
  log("kernel idle; running all cells");
  const t0 = Date.now();
  await page.evaluate(() => {
    window.__rlmSeen = [];
    new MutationObserver(() => {
      const el = document.querySelector(".rlm-fanout .rlm-fanout-count");
      const v = el && el.textContent.trim();
      if (v && window.__rlmSeen[window.__rlmSeen.length - 1]?.[1] !== v) window.__rlmSeen.push([Date.now(), v]);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
    window.jupyterapp.commands.execute("notebook:run-all-cells");
  });

  const countSel = ".rlm-fanout .rlm-fanout-count";
  await page.waitForSelector(countSel, { timeout: cfg.timeout_ms });
  result.fanout_seen_at = (await page.textContent(countSel)).trim();
  // Live updates: every distinct value the fan-out count and the budget's calls show while the cell runs.
  result.fanout_counts_seen = [];
  result.budget_calls_seen = [];
  const deadline = Date.now() + cfg.timeout_ms;
  for (;;) {
    const seen = await page.evaluate(() => [
      document.querySelector(".rlm-fanout .rlm-fanout-count")?.textContent.trim(),
      document.querySelector(".rlm-budget .rlm-budget-calls")?.textContent.trim(),
    ]);
    if (seen[0] && !result.fanout_counts_seen.includes(seen[0])) result.fanout_counts_seen.push(seen[0]);
    if (seen[1] && !result.budget_calls_seen.includes(seen[1])) result.budget_calls_seen.push(seen[1]);
    if (seen[0] === cfg.expect_count) break;
    if (Date.now() > deadline) throw new Error(`fan-out count stuck at ${seen[0]}`);
    await page.waitForTimeout(50);
  }
  result.fanout_count = (await page.textContent(countSel)).trim();
  result.observed = await page.evaluate((t) => window.__rlmSeen.map(([at, v]) => [at - t, v]), t0);
  result.fanout_bar_classes = await page.evaluate(() =>
    [...document.querySelectorAll(".rlm-fanout .rlm-fanout-bar *")].map((e) => e.className).join(" "),
  );
  result.fanout_stats = (await page.textContent(".rlm-fanout .rlm-fanout-stats")).trim();
  // Wait for the whole notebook to finish (every cell has an execution count, kernel idle).
  await page.waitForFunction(
    () => {
      const w = window.jupyterapp.shell.currentWidget;
      const k = w.sessionContext.session.kernel;
      const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")];
      return k.status === "idle" && prompts.every((p) => /\[\d+\]/.test(p.textContent));
    },
    null,
    { timeout: cfg.timeout_ms },
  );
  const tokenSel = ".rlm-budget .rlm-budget-input-tokens";
  await page
    .waitForFunction(
      ([sel, want]) => {
        const el = document.querySelector(sel);
        const counts = document.querySelector(".rlm-budget .rlm-budget-counts");
        return el && el.textContent.includes(want) && counts && counts.textContent.includes(" 0 in flight");
      },
      [tokenSel, cfg.expect_input_tokens],
      { timeout: 30000 },
    )
    .catch(() => log("budget did not settle at", cfg.expect_input_tokens));
  result.budget_input_tokens = (await page.textContent(tokenSel))?.trim();
  result.budget_output_tokens = (await page.textContent(".rlm-budget .rlm-budget-output-tokens"))?.trim();
  result.budget_calls = (await page.textContent(".rlm-budget .rlm-budget-calls"))?.trim();
  result.budget_usd = (await page.textContent(".rlm-budget .rlm-budget-usd"))?.trim();
  result.budget_counts = (await page.textContent(".rlm-budget .rlm-budget-counts"))?.trim();
  result.budget_gauge_classes = await page.evaluate(() =>
    [...document.querySelectorAll(".rlm-budget .rlm-budget-gauge *")].map((e) => e.className).join(" "),
  );
  result.widget_count = await page.locator(".rlm-fanout").count();
  result.outputs_text = (await page.locator(".jp-OutputArea-output").allTextContents()).map((t) => t.trim());
  result.ok = true;
} catch (e) {
  result.error = String(e);
  result.outputs_text = await page
    .locator(".jp-OutputArea-output")
    .allTextContents()
    .catch(() => []);
} finally {
  await page.screenshot({ path: cfg.screenshot, fullPage: true }).catch((e) => log("screenshot", String(e)));
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
