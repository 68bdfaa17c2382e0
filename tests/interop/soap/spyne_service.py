"""The calculator of tests/fixtures/soap/calculator.wsdl, served by spyne 2.14 (a real SOAP
stack) on a SOAP 1.1 port (/calc11) and a SOAP 1.2 port (/calc12), each recording the raw
requests it receives so the checks can compare sluice's envelopes with zeep's.

Document/literal wrapped in urn:sluice:calculator: Add/Subtract/Multiply (xs:int) and Divide
(xs:double; b = 0 raises a declared fault). Requests are validated against spyne's schema
(lxml), so an xs:int overflow is a Client fault on 1.1 (spyne 2.14 answers 1.2 validation
failures with a bare HTTP 500).
"""

from __future__ import annotations

import io
import logging
import threading
import wsgiref.simple_server
from wsgiref.simple_server import WSGIRequestHandler, make_server

from spyne import Application, Double, Integer32, ServiceBase, rpc
from spyne.model.fault import Fault
from spyne.protocol.soap import Soap11, Soap12
from spyne.server.wsgi import WsgiApplication

TNS = "urn:sluice:calculator"
logging.getLogger("spyne").setLevel(logging.CRITICAL)
# spyne 2.14 crashes on SOAP 1.2 validation faults (a check expects its bare 500); keep the
# traceback wsgiref would print for it out of the report.
wsgiref.simple_server.ServerHandler.log_exception = lambda self, exc_info: None


class Calculator(ServiceBase):
    @rpc(Integer32, Integer32, _returns=Integer32)
    def Add(ctx, a, b):  # noqa: N802 - the WSDL's operation name
        return a + b

    @rpc(Integer32, Integer32, _returns=Integer32)
    def Subtract(ctx, a, b):  # noqa: N802
        return a - b

    @rpc(Integer32, Integer32, _returns=Integer32)
    def Multiply(ctx, a, b):  # noqa: N802
        return a * b

    @rpc(Integer32, Integer32, _returns=Double)
    def Divide(ctx, a, b):  # noqa: N802
        if b == 0:
            raise Fault(faultcode="Client.DivisionByZero", faultstring="division by zero")
        return a / b


def application(protocol):
    return WsgiApplication(
        Application([Calculator], tns=TNS, in_protocol=protocol(validator="lxml"), out_protocol=protocol())
    )


class Recorder:
    """Routes /calc11 and /calc12 and keeps (path, headers, body) of every request."""

    def __init__(self) -> None:
        self.apps = {"/calc11": application(Soap11), "/calc12": application(Soap12)}
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        app = self.apps.get(path)
        if app is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"no such port"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        headers["content-type"] = environ.get("CONTENT_TYPE", "")
        with self.lock:
            self.requests.append((path, headers, body))
        environ["wsgi.input"] = io.BytesIO(body)
        return app(environ, start_response)

    def last(self, path: str) -> tuple[dict[str, str], bytes]:
        with self.lock:
            for p, headers, body in reversed(self.requests):
                if p == path:
                    return headers, body
        raise AssertionError(f"no request reached {path}")


class Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # noqa: D401 - silence the access log
        pass


def start() -> tuple[Recorder, int]:
    """Serves on a free loopback port in a daemon thread; returns the recorder and the port."""
    recorder = Recorder()
    server = make_server("127.0.0.1", 0, recorder, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return recorder, server.server_address[1]
