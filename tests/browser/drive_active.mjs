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
// every request to the server's contents or kernels API that writes (a script acting as the person)
const api_writes = [];
page.on("request", (r) => {
  if (r.method() !== "GET" && /\/api\/contents\/pwned/.test(r.url())) api_writes.push(r.method() + " " + r.url());
});
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
  // outputs render (and MathJax typesets) after the kernel is idle: wait for what the test names, if any
  if (cfg.wait_for_text) {
    await page.waitForFunction(
      (marks) => {
        const text = [...document.querySelectorAll(".jp-OutputArea-output")].map((o) => o.textContent).join("\n");
        return marks.every((m) => text.includes(m));
      },
      cfg.wait_for_text,
      { timeout: 120000 },
    );
  }
  if (cfg.wait_for_math_in) {
    await page.waitForFunction(
      (label) =>
        [...document.querySelectorAll(".jp-OutputArea-output")].some(
          (o) => o.textContent.startsWith(label) && o.querySelector("mjx-container") !== null,
        ),
      cfg.wait_for_math_in,
      { timeout: 120000 },
    );
  }
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
  // MathJax: formulas typeset in outputs and in the notebook's own Markdown cells, and any element of a
  // formula drawn with a border, a background or a colour (a styled box) — MathJax's own marks aside: red
  // for an undefined command, and its error display (the source in red on yellow, mjx-merror)
  result.math = await page.evaluate(() => {
    const styled = (root) =>
      [...root.querySelectorAll("mjx-container, mjx-container *")]
        .filter((e) => {
          // errors, the hidden MathML copy, and the rules of fractions and over/underlines (drawn as borders)
          if (e.closest("mjx-merror, mjx-assistive-mml") !== null || e.tagName === "MJX-LINE") return false;
          const s = getComputedStyle(e);
          const border = ["Top", "Right", "Bottom", "Left"].some(
            (side) => s["border" + side + "Style"] !== "none" && parseFloat(s["border" + side + "Width"]) > 0,
          );
          const background = s.backgroundColor !== "rgba(0, 0, 0, 0)" && s.backgroundColor !== "transparent";
          const colour = !["rgb(0, 0, 0)", "rgba(0, 0, 0, 0.87)", "rgb(255, 0, 0)"].includes(s.color);
          const link = e.tagName === "A" || e.closest("a") !== null;
          return border || background || link || (colour && e.textContent.trim() !== "");
        })
        .map((e) => e.tagName.toLowerCase() + ": " + e.textContent.slice(0, 60));
    const outputs = [...document.querySelectorAll(".jp-OutputArea-output")];
    const cells = [...document.querySelectorAll(".jp-MarkdownCell .jp-RenderedMarkdown")];
    return {
      in_outputs: outputs.reduce((n, o) => n + o.querySelectorAll("mjx-container").length, 0),
      styled_in_outputs: outputs.flatMap(styled),
      in_markdown_cells: cells.reduce((n, o) => n + o.querySelectorAll("mjx-container").length, 0),
      styled_in_markdown_cells: cells.flatMap(styled),
      per_output: outputs.map((o) => [o.querySelectorAll("mjx-container").length, o.textContent.slice(0, 80)]),
    };
  });
  result.api_writes = api_writes.slice();
  await page.screenshot({ path: cfg.screenshot, fullPage: true }).catch((e) => log("screenshot", String(e)));
  // The control: the very payload the outputs carried, run in the page, does change the title and reach the
  // server API (so a clean result above means the kernel stopped it, not that the probe cannot see it).
  await page.evaluate(cfg.control_js);
  await page.waitForTimeout(2000);
  result.title_control = await page.title();
  result.flag_control = await page.evaluate(() => window.__rlm_pwned ?? null);
  result.refused = refused;
  result.api_writes_with_control = api_writes.slice();
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
