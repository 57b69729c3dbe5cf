"""Serve the built book as a reader's host does: text assets gzip-compressed.

    .venv/bin/python tools/book/serve.py [_build/html] [--port 8000] [--no-gzip]

A plain static server (``python -m http.server``) sends every byte as stored: the book's first visit
is then about 2.5 times heavier than from a host that compresses. GitHub Pages compresses HTML, CSS,
JavaScript, JSON and SVG on the fly (gzip) and ignores pre-compressed ``.gz`` files beside them, so
the published book needs nothing more; this server does the same for ``make serve`` and for
``tools/book/reader_metrics.py``. Fonts (woff2) and images are compressed already and go as stored.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the suffixes a host compresses: text (fonts and images are compressed formats already)
COMPRESSIBLE = {".html", ".css", ".js", ".json", ".svg", ".txt", ".xml", ".map", ".ipynb", ".inv", ".md"}


class BookHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, text ones gzipped for a client that accepts gzip (compressed once per file version)."""

    gzip = True
    _cache: dict[tuple[str, int, int], bytes] = {}
    _lock = threading.Lock()

    def log_message(self, *args):
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        if (not self.gzip or os.path.isdir(path) or Path(path).suffix not in COMPRESSIBLE
                or "gzip" not in self.headers.get("Accept-Encoding", "") or not os.path.isfile(path)):
            return super().send_head()
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            body = self._cache.get(key)
        if body is None:
            body = gzip.compress(Path(path).read_bytes(), compresslevel=6, mtime=0)
            with self._lock:
                self._cache[key] = body
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
        self.end_headers()
        return io.BytesIO(body)


def start(directory: Path, port: int = 0, *, compress: bool = True, host: str = "127.0.0.1"):
    """A threaded server of ``directory`` on ``host:port`` (0: a free port), running in a daemon thread:
    the server (``.server_address``, ``.shutdown()``)."""
    if not Path(directory).is_dir():
        raise FileNotFoundError(f"directory={directory} does not exist: build the book first (make book)")
    handler = type("Handler", (BookHandler,), {"gzip": compress})
    httpd = http.server.ThreadingHTTPServer((host, port), functools.partial(handler, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", nargs="?", default=str(ROOT / "_build" / "html"), help="the built book")
    parser.add_argument("--port", type=int, default=8000, help="the port on 127.0.0.1 (default 8000)")
    parser.add_argument("--no-gzip", action="store_true", help="send every file as stored, as a plain server does")
    args = parser.parse_args(argv)
    if not (Path(args.book) / "index.html").is_file():
        parser.error(f"book={args.book} has no index.html: build it with `make book`")
    httpd = start(Path(args.book), args.port, compress=not args.no_gzip)
    print(f"Serving {args.book} at http://127.0.0.1:{httpd.server_address[1]}/ (中文: /zh/); Ctrl-C stops.")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        httpd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
