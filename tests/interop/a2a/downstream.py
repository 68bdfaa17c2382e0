"""The stub downstream API of the A2A interop fixture (tests/interop/a2a/sluice.a2a.toml).

Prints the port it listens on as its first stdout line, then serves until killed. Standard library
only, so it runs with any python3. Routes (all JSON):

  GET /customers/{id}   one customer (404 when unknown): the `get_customer` tool
  GET /slow?ms=N        sleeps N milliseconds (default 3000), then answers: the `slow` tool, for
                        cancel, subscribe, follow-ups and the two-instance case
  GET /fail             500 with an error body: the `fail` tool, whose task must end FAILED
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

CUSTOMERS = {
    "c-100": {"customer_id": "c-100", "full_name": "Ada Lovelace", "town": "London"},
    "c-200": {"customer_id": "c-200", "full_name": "Grace Hopper", "town": "New York"},
}

# Longest sleep /slow accepts, so a wrong argument cannot hold a thread for long.
MAX_SLOW_MS = 30_000


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass

    def _send(self, status, payload):
        body = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            # sluice dropped the call (a canceled task): nobody is listening any more.
            pass

    def do_GET(self):  # noqa: N802 - the stdlib's name
        url = urlparse(self.path)
        parts = [p for p in url.path.split("/") if p]
        if len(parts) == 2 and parts[0] == "customers":
            customer = CUSTOMERS.get(parts[1])
            if customer is None:
                self._send(404, {"error": "no such customer"})
            else:
                self._send(200, customer)
        elif parts == ["slow"]:
            try:
                ms = int(parse_qs(url.query).get("ms", ["3000"])[0])
            except ValueError:
                ms = 3000
            time.sleep(min(max(ms, 0), MAX_SLOW_MS) / 1000)
            self._send(200, {"slept_ms": ms})
        elif parts == ["fail"]:
            self._send(500, {"error": "the stub always fails here"})
        else:
            self._send(404, {"error": "no such route"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
