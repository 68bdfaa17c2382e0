"""A tiny loopback CRM API for the interop fixture: sluice's tools call it.

Prints the port it listens on as its first stdout line, then serves until killed. Standard library
only, so it runs with any python3. Routes (all JSON):

  GET  /customers/{id}      one customer in the downstream's own field names (404 when unknown)
  GET  /customers?town=X    {"count": n, "items": [...]}
  POST /orders              echoes the order with a number
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

CUSTOMERS = {
    "c-100": {
        "customer_id": "c-100",
        "full_name": "Ada Lovelace",
        "contact": {"email_address": "ada@example.com", "phone": "+44 20 0000 0000"},
        "town": "London",
        "internal_score": 97,
    },
    "c-200": {
        "customer_id": "c-200",
        "full_name": "Grace Hopper",
        "contact": {"email_address": "grace@example.com", "phone": "+1 212 000 0000"},
        "town": "New York",
        "internal_score": 99,
    },
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass

    def _send(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - the stdlib's name
        url = urlparse(self.path)
        parts = [p for p in url.path.split("/") if p]
        if parts == ["customers"]:
            town = parse_qs(url.query).get("town", [None])[0]
            items = [c for c in CUSTOMERS.values() if town is None or c["town"] == town]
            self._send(200, {"count": len(items), "items": items})
        elif len(parts) == 2 and parts[0] == "customers":
            customer = CUSTOMERS.get(parts[1])
            if customer is None:
                self._send(404, {"error": "no such customer"})
            else:
                self._send(200, customer)
        else:
            self._send(404, {"error": "no such route"})

    def do_POST(self):  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        if urlparse(self.path).path != "/orders":
            self._send(404, {"error": "no such route"})
            return
        try:
            order = json.loads(raw)
        except ValueError:
            self._send(400, {"error": "bad json"})
            return
        lines = order.get("lines") or []
        self._send(201, {"order_no": "o-1", "state": "accepted", "line_count": len(lines)})


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
