// Time the visualizer as a user meets it, in Debian's Chromium (headless): the first view after
// navigation (until the page says it is ready), then switching programs (arrow keys) and ops (j), each
// until the page shows the new selection. For bench/view.py; prints JSON (milliseconds).
//
//   node web/tests/timing.mjs URL [SWITCHES]
import { chromium } from "playwright-core";

const [url, n = "10"] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const out = { first_view_ms: 0, program_switch_ms: [], op_switch_ms: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const t0 = Date.now();
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { state: "attached", timeout: 60000 });
  out.first_view_ms = Date.now() - t0;
  const timed = async (key) => {
    const before = await page.evaluate(() => document.body.dataset.shown);
    const t = Date.now();
    await page.keyboard.press(key);
    await page.waitForFunction((b) => document.body.dataset.shown !== b, before, { timeout: 30000 });
    return Date.now() - t;
  };
  for (let i = 0; i < Number(n); i++) out.program_switch_ms.push(await timed("ArrowRight"));
  for (let i = 0; i < Number(n); i++) out.op_switch_ms.push(await timed("j"));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
