"""What a reader of the built book sees, counted in headless Chromium (offline), for both editions.

    .venv/bin/python tools/book/reader_metrics.py [_build/html] [--words N]
    .venv/bin/python tools/book/reader_metrics.py [_build/html] --first-visit [--plain]

Prints, per edition: the panels of the chapter pages live in the page (computed or switching between
recorded results) and empty (no text, no drawing), of all panels; the code blocks that need sideways
scrolling at 1280 px, of all visible code blocks; the chapter pages wider than 390 px; and, for the
Chinese edition, the share of the visible prose still in English: Latin-letter words outside code,
outputs (panels included), math and proper names, of all visible words, a Chinese word counted per
1.65 characters; and the same share for the panels' own text (titles, notes, labels, results). ``--words N`` also lists the N commonest such English words.

``--first-visit``: a reader's first visit (empty cache) of the chapters of :data:`FIRST_VISIT` in each
edition on a slow phone profile (:data:`FAST_3G` and a 4x slower CPU, through the DevTools protocol),
the book served gzip-compressed as a host serves it (``tools/book/serve.py``; ``--plain``: as stored):
requests, bytes transferred, first contentful paint and the moment every live panel's controls work.
"""

from __future__ import annotations

import argparse
import collections
import functools
import http.server
import json
import re
import shutil
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Chinese characters per word (the measure's convention).
CHARS_PER_WORD = 1.65
#: Names that stay Latin in Chinese prose: people, products, libraries, units and the course's identifiers.
PROPER_NAMES = {
    "pytorch", "torch", "numpy", "python", "jupyter", "jupyterlab", "colab", "einops", "einsum", "lectorch",
    "stanford", "percy", "liang", "tatsunori", "hashimoto", "nvidia", "amd", "intel", "apple", "google",
    "adam", "adamw", "sgd", "adagrad", "rmsprop", "xavier", "kaiming", "he", "glorot", "chinchilla", "llama",
    "gpt", "cuda", "triton", "tinylm", "cruncher", "flopcountermode", "safetensors", "tqdm", "matplotlib",
    "linux", "macos", "windows", "chromium", "github", "pip", "make", "nbval", "pytest", "roofline",
    "language", "modeling", "from", "scratch",  # the lecture's title, quoted as a name
}
WORDS = """() => {
  const root = document.querySelector('article') || document.body;
  const skip = 'pre, code, .cell_output, .lectorch-panel, mjx-container, .math, script, style, .headerlink, kbd, samp';
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const parts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip) || !el.checkVisibility()) continue;
    parts.push(n.textContent);
  }
  return parts.join(' ');
}"""
#: the text a panel shows (title, note, controls' labels, result), outside code
PANEL_WORDS = """() => Array.from(document.querySelectorAll('.lectorch-panel')).map(p => {
  const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT), parts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el && !el.closest('code, pre, script, option') && el.checkVisibility()) parts.push(n.textContent);
  }
  return parts.join(' ');
}).join(' ')"""
PANELS = """() => Array.from(document.querySelectorAll('.lectorch-panel')).map(p => {
  const r = p.querySelector('.lp-result');
  return {working: (!!p.dataset.live || !!p.dataset.recorded) && p.classList.contains('lp-ready'),
          empty: !r || (!r.innerText.trim() && !r.querySelector('svg, img, table'))};
})"""
CODE = """() => { const pres = Array.from(document.querySelectorAll('article pre')).filter(p => p.offsetParent);
  return {pres: pres.length, scrolling: pres.filter(p => p.scrollWidth > p.clientWidth + 1).length}; }"""


#: the chapters whose first visit is measured
FIRST_VISIT = ("00_napkin_math", "03_strides_views", "05_flops_mfu", "08_optimizers_memory", "10_precision_scale")
#: Chrome DevTools' "Fast 3G" preset (its network panel's numbers): latency in ms, throughput in bytes/s
FAST_3G = {"offline": False, "latency": 562.5, "downloadThroughput": 1.6e6 * 0.9 / 8,
           "uploadThroughput": 750e3 * 0.9 / 8}
CPU_SLOWDOWN = 4
#: the page-clock moment every live or recorded panel has working controls (0 while one has not)
PANELS_USABLE = """() => document.readyState !== 'loading'
  && !document.querySelector('.lectorch-panel[data-live]:not(.lp-ready), .lectorch-panel[data-recorded]:not(.lp-ready)')
  ? performance.now() : 0"""


def first_visit(browser, url: str) -> dict:
    """One first visit of ``url`` in a fresh browser context on the slow profile: requests, bytes
    transferred (as encoded on the wire), first contentful paint and panels usable (s from navigation)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    cdp.send("Network.emulateNetworkConditions", FAST_3G)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
    sizes: dict[str, float] = {}
    urls: dict[str, str] = {}
    cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    page.goto(url, wait_until="commit")
    usable = page.wait_for_function(PANELS_USABLE, polling=50, timeout=120_000).json_value() / 1000
    page.wait_for_load_state("load", timeout=120_000)
    page.wait_for_load_state("networkidle", timeout=120_000)
    paint = page.evaluate("() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0")
    context.close()
    by_file = sorted(((sizes.get(r, 0), u) for r, u in urls.items()), reverse=True)
    return {"requests": len(urls), "bytes": sum(sizes.values()), "paint_s": paint / 1000, "usable_s": usable,
            "largest": [(round(b), u.split("/", 3)[-1].split("?")[0]) for b, u in by_file[:8]]}


def measure_first_visits(book: Path, *, compress: bool = True) -> dict[str, dict]:
    """:func:`first_visit` of each chapter of :data:`FIRST_VISIT`, English and 中文: {path: facts}."""
    from playwright.sync_api import sync_playwright

    import serve

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    httpd = serve.start(book, compress=compress)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    out = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"])
        for edition in ("", "zh/"):
            for name in FIRST_VISIT:
                path = f"{edition}chapters/{name}.html"
                out[path] = first_visit(browser, f"{base}/{path}")
        browser.close()
    httpd.shutdown()
    return out


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def english_share(text: str) -> tuple[int, float, collections.Counter]:
    """English words (outside proper names), all words, and the English words counted.

    >>> english, total, _ = english_share("张量的 stride 与 PyTorch")
    >>> english, round(total, 2)
    (1, 4.42)
    """
    cjk = len(re.findall(r"[\u3400-\u9fff\uf900-\ufaff]", text))
    latin = re.findall(r"[A-Za-z][A-Za-z0-9_'’-]*", text)
    # not English words: names, acronyms (GPU, MFU), identifiers with digits (fp16, H100) and one-letter symbols
    english = collections.Counter(w.lower() for w in latin
                                  if w.lower() not in PROPER_NAMES and len(w) > 1 and not w.isupper()
                                  and not re.search(r"[\d_]", w))
    return sum(english.values()), len(latin) + cjk / CHARS_PER_WORD, english


def measure(book: Path, words: int = 0) -> dict:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(book)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    out = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"], headless=True)
        for edition in ("", "zh/"):
            pages = sorted(f"{edition}chapters/{p.name}" for p in (book / edition / "chapters").glob("[0-9][0-9]_*.html"))
            facts = {"panels": 0, "live": 0, "empty": 0, "pres": 0, "scrolling": 0, "wide_at_390": [],
                     "english": 0, "words": 0.0, "panel_english": 0, "panel_words": 0.0}
            counted: collections.Counter = collections.Counter()
            in_panels: collections.Counter = collections.Counter()
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())
            page = context.new_page()
            for path in pages:
                page.goto(f"{base}/{path}", wait_until="load")
                page.wait_for_timeout(300)
                panels = page.evaluate(PANELS)
                facts["panels"] += len(panels)
                facts["live"] += sum(p["working"] for p in panels)
                facts["empty"] += sum(p["empty"] for p in panels)
                code = page.evaluate(CODE)
                facts["pres"] += code["pres"]
                facts["scrolling"] += code["scrolling"]
                if edition:
                    english, total, seen = english_share(page.evaluate(WORDS))
                    facts["english"] += english
                    facts["words"] += total
                    counted += seen
                    english, total, seen = english_share(page.evaluate(PANEL_WORDS))
                    in_panels += seen
                    facts["panel_english"] += english
                    facts["panel_words"] += total
            page.set_viewport_size({"width": 390, "height": 844})
            for path in pages:
                page.goto(f"{base}/{path}", wait_until="load")
                page.wait_for_timeout(200)
                if page.evaluate("() => document.documentElement.scrollWidth") > 390:
                    facts["wide_at_390"].append(path)
            context.close()
            if edition:
                facts["english_share"] = facts["english"] / facts["words"] if facts["words"] else 0.0
                facts["commonest_english"] = counted.most_common(words)
                facts["commonest_in_panels"] = in_panels.most_common(words)
            out[edition.rstrip("/") or "en"] = facts
        browser.close()
    httpd.shutdown()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", nargs="?", default=str(ROOT / "_build" / "html"), help="the built English book (zh/ inside)")
    parser.add_argument("--words", type=int, default=0, help="list the N commonest English words of the zh pages")
    parser.add_argument("--first-visit", action="store_true", help="measure first visits on a Fast 3G, 4x slower CPU profile")
    parser.add_argument("--plain", action="store_true", help="with --first-visit: serve the book uncompressed")
    parser.add_argument("--json", help="with --first-visit: also write the facts to this JSON file")
    args = parser.parse_args(argv)
    book = Path(args.book)
    if not (book / "chapters").is_dir() or not (book / "zh" / "chapters").is_dir():
        parser.error(f"book={book} has no chapters/ and zh/chapters/: build it with `make book`")
    if args.first_visit:
        import statistics

        visits = measure_first_visits(book, compress=not args.plain)
        print(f"first visit, {'as stored' if args.plain else 'gzip'}, Fast 3G + {CPU_SLOWDOWN}x CPU "
              "(requests, KB transferred, first paint s, panels usable s):")
        for path, f in visits.items():
            print(f"  {path:42} {f['requests']:3d} {f['bytes'] / 1000:7.0f} KB {f['paint_s']:5.1f} s {f['usable_s']:5.1f} s")
            print("    largest:", ", ".join(f"{u} {b / 1000:.0f}" for b, u in f["largest"][:5]))
        for key in ("requests", "bytes", "paint_s", "usable_s"):
            print(f"  median {key}: {statistics.median(f[key] for f in visits.values()):.6g}"
                  f" (max {max(f[key] for f in visits.values()):.6g})")
        if args.json:
            Path(args.json).write_text(json.dumps(visits, indent=1))
        return 0
    for edition, f in measure(book, args.words).items():
        line = (f"{edition}: panels live {f['live']}/{f['panels']}, empty {f['empty']}/{f['panels']}; "
                f"code blocks scrolling at 1280 px {f['scrolling']}/{f['pres']} "
                f"({f['scrolling'] / max(f['pres'], 1):.1%}); pages wider than 390 px {len(f['wide_at_390'])}")
        if edition == "zh":
            line += (f"; English in the prose {f['english']}/{f['words']:.0f} words ({f['english_share']:.2%}); "
                     f"in the panels' text {f['panel_english']}/{f['panel_words']:.0f} words "
                     f"({f['panel_english'] / max(f['panel_words'], 1):.1%})")
        print(line)
        if f.get("wide_at_390"):
            print("  wide:", ", ".join(f["wide_at_390"]))
        if f.get("commonest_english"):
            print("  commonest English words:", json.dumps(f["commonest_english"], ensure_ascii=False))
            print("  in the panels:", json.dumps(f["commonest_in_panels"], ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
