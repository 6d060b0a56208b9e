// Drive Debian's Chromium (headless, Playwright's playwright-core) through a scripted session of the
// web visualizer, for tests/python/test_view.py, which makes the trace, starts `tilescope view`, and
// asserts on what this reports.
//
//   node web/tests/drive.mjs SCRIPT.json   ->   stdout: JSON {"reads": {...}, "console_errors": [...]}
//
// SCRIPT: {"url": "...", "screenshots": DIR, "width": 1280, "height": 800, "steps": [STEP, ...]} with
// STEP one of {"click": CSS}, {"click_at": [CSS, X, Y]} (X, Y CSS pixels from its corner), {"click_text": [CSS, TEXT]} (the first CSS match containing TEXT),
// {"click_code_line": [PANEL_ID, LINE]}, {"key": KEY}, {"wait_for": [CSS, ATTR, VALUE, MS?]} (until the
// attribute equals VALUE; 10 s unless MS), {"wait_selector": [CSS, MS?]} (until CSS matches), {"reload": 1}
// (the page again, until it is ready), {"read": [NAME, CSS, ATTR]} (ATTR "text": the text), {"read_all":
// [NAME, CSS, ATTR]} (of every match, a list, at once), {"select": [CSS,
// VALUE]}, {"fill": [CSS, VALUE]} (then a change event), {"download": [CSS,
// PATH]} (click, save the download there), {"screenshot": NAME}, {"wheel": [CSS, DELTA_Y, TIMES]} (the mouse
// over the element's centre, then TIMES wheel turns), {"measure": [NAME, CSS]} (the element's box and
// scroll sizes: {x, y, width, height, clientWidth, clientHeight, scrollWidth, scrollHeight}), {"pixels":
// [NAME, CSS, "#rrggbb"]} (a canvas's drawn pixels of that colour, each channel within 3: {count, box:
// [x0, y0, x1, y1] in CSS pixels from its corner, or null, run: the median length in CSS pixels of the
// horizontal runs of them}), {"hover": [CSS, X, Y]} (the mouse to X, Y CSS pixels from the element's
// corner; once more when the requests it started are answered), {"hover_cell": [CSS, ROW, COL]} (the same,
// at the middle of a heatmap's cell, from its data-origin and data-scale), {"line_breaks": [NAME, CSS]} (the
// text of every match with "|" where the browser broke it onto a new line), {"boxes": [NAME, CSS, OUTER]} (every
// visible match's left and right edges in CSS pixels, with its id or tag and classes, and those of its
// nearest ancestor matching OUTER: [{what, left, right, outer_left, outer_right}]), {"ids": NAME} (every id that more than one element of the page has, with its count).
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const script = JSON.parse(readFileSync(process.argv[2], "utf8"));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const out = { reads: {}, console_errors: [] };
try {
  const page = await browser.newPage({ viewport: { width: script.width ?? 1280, height: script.height ?? 800 } });
  page.on("console", (m) => { if (m.type() === "error") out.console_errors.push(m.text()); });
  page.on("pageerror", (e) => out.console_errors.push(String(e)));
  await page.goto(script.url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 15000 });
  for (const step of script.steps) {
    if (step.click) await page.click(step.click);
    else if (step.click_at) await page.click(step.click_at[0], { position: { x: step.click_at[1], y: step.click_at[2] } });
    else if (step.click_text) await page.locator(step.click_text[0], { hasText: step.click_text[1] }).first().click();
    else if (step.click_code_line) {
      // CodeMirror draws only the lines near its viewport (and a wrapped line takes several rows): scroll
      // the editor until its gutter shows the line's number, then click that line's first row.
      const [panel, line] = step.click_code_line;
      const find = () => page.evaluate(([p, n]) => {
        const nums = [...document.querySelectorAll(`#${p} .cm-lineNumbers .cm-gutterElement`)]
          .filter((e) => e.offsetHeight > 0);
        const hit = nums.find((e) => e.textContent.trim() === String(n));
        if (hit) {
          hit.scrollIntoView({ block: "center" });
          const r = hit.getBoundingClientRect();
          const c = document.querySelector(`#${p} .cm-content`).getBoundingClientRect();
          return { y: r.top + Math.min(r.height / 2, 8), x: c.left + 24 };
        }
        const seen = nums.map((e) => parseInt(e.textContent, 10)).filter((v) => !Number.isNaN(v));
        const s = document.querySelector(`#${p} .cm-scroller`);
        s.scrollTop += (seen.length && n < Math.min(...seen) ? -0.8 : 0.8) * s.clientHeight;
        return null;
      }, [panel, line]);
      let at = null;
      for (let i = 0; i < 400 && !at; i++) {
        at = await find();
        if (!at) await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      }
      if (!at) throw new Error(`line ${line} of #${panel} never came into view`);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const again = await find();  // its position after the scroll settled
      await page.mouse.click((again ?? at).x, (again ?? at).y);
    } else if (step.key) await page.keyboard.press(step.key);
    else if (step.wait_for) {
      const [css, attr, value, timeout] = step.wait_for;
      await page.waitForFunction(([c, a, v]) => document.querySelector(c)?.getAttribute(a) === v, [css, attr, value],
                                 { timeout: timeout ?? 10000 });
    } else if (step.wait_selector) {
      const [css, timeout] = step.wait_selector;
      await page.waitForSelector(css, { timeout: timeout ?? 10000 });
    } else if (step.reload) {
      await page.reload();
      await page.waitForSelector("body[data-ready='1']", { timeout: 15000 });
    } else if (step.read) {
      const [name, css, attr] = step.read;
      // The view settles: no request in flight (body[data-busy], web/src/api.ts), then two frames.
      await page.waitForFunction(() => (document.body.dataset.busy ?? "0") === "0", null, { timeout: 30000 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      out.reads[name] = await page.evaluate(([c, a]) => {
        const e = document.querySelector(c);
        return e ? (a === "text" ? e.textContent : e.getAttribute(a)) : null;
      }, [css, attr]);
    } else if (step.read_all) {
      const [name, css, attr] = step.read_all; // every match, as a list (no settling: for streamed text)
      out.reads[name] = await page.evaluate(([c, a]) => [...document.querySelectorAll(c)].map((e) =>
        a === "text" ? e.textContent : e.getAttribute(a)), [css, attr]);
    } else if (step.select) {
      await page.selectOption(step.select[0], step.select[1]);
    } else if (step.fill) {
      await page.fill(step.fill[0], step.fill[1]);
      await page.dispatchEvent(step.fill[0], "change");
    } else if (step.download) {
      const [css, path] = step.download;
      const [d] = await Promise.all([page.waitForEvent("download"), page.click(css)]);
      await d.saveAs(path);
    } else if (step.wheel) {
      const [css, dy, times] = step.wheel;
      const box = await page.locator(css).first().boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      for (let i = 0; i < (times ?? 1); i++) await page.mouse.wheel(0, dy);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    } else if (step.hover || step.hover_cell) {
      let [css, x, y] = step.hover ?? step.hover_cell;
      if (step.hover_cell) {
        await page.waitForFunction(() => (document.body.dataset.busy ?? "0") === "0", null, { timeout: 30000 });
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        const [ox, oy, s] = await page.evaluate((c) => {
          const e = document.querySelector(c);
          return [...e.dataset.origin.split(",").map(Number), Number(e.dataset.scale)];
        }, css);
        [x, y] = [ox + (y + 0.5) * s, oy + (x + 0.5) * s]; // ROW, COL given as x, y
      }
      const box = await page.locator(css).first().boundingBox();
      await page.mouse.move(box.x + x, box.y + y);
      await page.waitForFunction(() => (document.body.dataset.busy ?? "0") === "0", null, { timeout: 30000 });
      // step.once: no second move (what the page shows when what it fetched for the hover arrives)
      if (!step.once) await page.mouse.move(box.x + x + 0.25, box.y + y);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    } else if (step.measure) {
      const [name, css] = step.measure;
      await page.waitForFunction(() => (document.body.dataset.busy ?? "0") === "0", null, { timeout: 30000 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      out.reads[name] = await page.evaluate((c) => {
        const e = document.querySelector(c);
        if (!e) return null;
        const r = e.getBoundingClientRect();
        return { x: r.x, y: r.y, width: r.width, height: r.height, clientWidth: e.clientWidth,
                 clientHeight: e.clientHeight, scrollWidth: e.scrollWidth, scrollHeight: e.scrollHeight };
      }, css);
    } else if (step.pixels) {
      const [name, css, hex] = step.pixels;
      await page.waitForFunction(() => (document.body.dataset.busy ?? "0") === "0", null, { timeout: 30000 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      out.reads[name] = await page.evaluate(([c, h]) => {
        const canvas = document.querySelector(c);
        const want = [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
        const { width, height } = canvas;
        const px = canvas.getContext("2d").getImageData(0, 0, width, height).data;
        const dpr = width / canvas.getBoundingClientRect().width;
        let count = 0, x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
        const runs = [];
        for (let y = 0; y < height; y++) {
          let run = 0;
          for (let x = 0; x <= width; x++) {
            const k = 4 * (y * width + x);
            const hit = x < width && px[k + 3] === 255 && want.every((v, i) => Math.abs(px[k + i] - v) <= 3);
            if (hit) {
              count++, run++;
              x0 = Math.min(x0, x), y0 = Math.min(y0, y), x1 = Math.max(x1, x + 1), y1 = Math.max(y1, y + 1);
            } else if (run) runs.push(run), (run = 0);
          }
        }
        runs.sort((a, b) => a - b);
        return { count: count / (dpr * dpr), box: count ? [x0 / dpr, y0 / dpr, x1 / dpr, y1 / dpr] : null,
                 run: runs.length ? runs[runs.length >> 1] / dpr : 0 };
      }, [css, hex]);
    } else if (step.line_breaks) {
      const [name, css] = step.line_breaks;
      await page.waitForFunction(() => (document.body.dataset.busy ?? "0") === "0", null, { timeout: 30000 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      out.reads[name] = await page.evaluate((c) => [...document.querySelectorAll(c)].map((e) => {
        // Each character's line box: a character below the previous one starts a new line.
        const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
        let text = "", top = null;
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
          for (let i = 0; i < n.data.length; i++) {
            const r = document.createRange();
            r.setStart(n, i);
            r.setEnd(n, i + 1);
            const box = r.getClientRects()[0];
            if (box && box.width > 0) {
              if (top !== null && box.top > top + box.height / 2) text += "|";
              top = box.top;
            }
            text += n.data[i];
          }
        }
        return text.trim();
      }), css);
    } else if (step.boxes) {
      const [name, css, outer] = step.boxes;
      await page.waitForFunction(() => (document.body.dataset.busy ?? "0") === "0", null, { timeout: 30000 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      out.reads[name] = await page.evaluate(([c, o]) => [...document.querySelectorAll(c)].flatMap((e) => {
        const r = e.getBoundingClientRect();
        if (!r.width || !r.height || getComputedStyle(e).visibility === "hidden") return [];
        const what = e.id ? `#${e.id}` : `${e.tagName.toLowerCase()}${[...e.classList].map((k) => "." + k).join("")}`;
        const box = e.parentElement?.closest(o)?.getBoundingClientRect();
        return [{ what, left: r.left, right: r.right, outer_left: box?.left ?? null, outer_right: box?.right ?? null }];
      }), [css, outer]);
    } else if (step.ids) {
      out.reads[step.ids] = await page.evaluate(() => {
        const n = {};
        for (const e of document.querySelectorAll("[id]")) n[e.id] = (n[e.id] ?? 0) + 1;
        return Object.fromEntries(Object.entries(n).filter(([, k]) => k > 1));
      });
    } else if (step.screenshot) await page.screenshot({ path: join(script.screenshots, `${step.screenshot}.png`) });
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
