// Drive JupyterLab in headless Chromium: run a notebook whose outputs carry script (model-written and a
// person's cell), then report whether any of it ran — the page title, a window flag — and, as the control
// that shows the probe works, run the same payload in the page directly.
// Usage: node drive_active.mjs <config.json>; prints one JSON line.
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
// Only loopback: anything else is refused (and would be a leak through the browser)
const refused = [];
await context.route(/^(?!https?:\/\/(127\.0\.0\.1|localhost)[:/]).*/, (route) => {
  refused.push(route.request().url());
  return route.abort();
});

const result = { ok: false };
const page = context.pages()[0] || (await context.newPage());
page.on("pageerror", (e) => log("pageerror", String(e)));
try {
  await page.goto(cfg.url, { waitUntil: "domcontentloaded", timeout: 60000 });
  await page.waitForFunction(() => window.jupyterapp !== undefined, null, { timeout: 60000 });
  await page.waitForSelector(".jp-Notebook .jp-Cell", { timeout: 60000 });
  await page.waitForFunction(
    () => {
      const w = window.jupyterapp.shell.currentWidget;
      const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
      return k && k.connectionStatus === "connected" && k.status === "idle";
    },
    null,
    { timeout: 90000 },
  );
  result.title_before = await page.title();
  await page.evaluate(() => window.jupyterapp.commands.execute("notebook:run-all-cells"));
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
  await page.waitForTimeout(3000); // time for any handler (onerror, onload, a fetch) to have run
  result.title_after = await page.title();
  result.flag_after = await page.evaluate(() => window.__rlm_pwned ?? null);
  result.outputs_text = (await page.locator(".jp-OutputArea-output").allTextContents()).map((t) => t.trim());
  // every live element of the outputs that could run script: script/frame/object tags, on* handlers,
  // javascript: URLs
  result.active_elements = await page.evaluate(() =>
    [...document.querySelectorAll(".jp-OutputArea-output *")]
      .filter(
        (e) =>
          ["SCRIPT", "IFRAME", "OBJECT", "EMBED", "FORM"].includes(e.tagName.toUpperCase()) ||
          [...e.attributes].some(
            (a) => a.name.startsWith("on") || /^\s*javascript:/i.test(a.value) || a.name === "srcdoc",
          ),
      )
      .map((e) => e.outerHTML.slice(0, 200)),
  );
  result.viewer_styled = await page.evaluate(() => {
    const box = document.querySelector(".rlmv .final");
    return box ? getComputedStyle(box).borderTopStyle : null;
  });
  await page.screenshot({ path: cfg.screenshot, fullPage: true }).catch((e) => log("screenshot", String(e)));
  // The control: the very payload the outputs carried, run in the page, does change the title and reach the
  // server API (so a clean result above means the kernel stopped it, not that the probe cannot see it).
  await page.evaluate(cfg.control_js);
  await page.waitForTimeout(2000);
  result.title_control = await page.title();
  result.flag_control = await page.evaluate(() => window.__rlm_pwned ?? null);
  result.refused = refused;
  result.ok = true;
} catch (e) {
  result.error = String(e);
  result.outputs_text = await page
    .locator(".jp-OutputArea-output")
    .allTextContents()
    .catch(() => []);
  await page.screenshot({ path: cfg.screenshot, fullPage: true }).catch(() => {});
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
