"""SOAP interop checks: sluice's SOAP tools against spyne 2.14, called by the official MCP Python
SDK client (mcp==2.3.0), with zeep 4.3 as the oracle for the request envelopes.

Run by tests/interop/soap/run.sh, which sets SLUICE_BIN (the sluice binary). Here: spyne serves
the calculator fixture (spyne_service.py) on a SOAP 1.1 and a 1.2 port; `sluice import wsdl`
turns tests/fixtures/soap/calculator.wsdl into tools, once per binding (tenants calc11 and
calc12); `sluice serve` runs that configuration; the client calls every operation on both
versions. Checks: results typed as the contract says, faults (division by zero, an xs:int the
service's schema refuses) as isError results with the service's message, and each envelope sluice
sent equal, canonically (namespaces by URI, no prefixes, no whitespace), to the one zeep builds
from the same WSDL for the same operation and arguments. Prints one line per check and, last,
`N passed, N failed`; exits 1 on any failure or when no check ran.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path

import anyio
import zeep
from lxml import etree
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import spyne_service

ROOT = Path(__file__).resolve().parents[3]
WSDL = ROOT / "tests/fixtures/soap/calculator.wsdl"
SLUICE = os.environ["SLUICE_BIN"]
SUMMARY = os.environ.get("INTEROP_SUMMARY")
SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/"
SOAP12 = "http://www.w3.org/2003/05/soap-envelope"


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, body) -> None:
        try:
            body()
        except Exception as error:  # noqa: BLE001 - every failure is a verdict
            self.failed += 1
            print(f"FAIL   {name}: {type(error).__name__}: {error}", flush=True)
            if os.environ.get("INTEROP_VERBOSE"):
                traceback.print_exception(error)
            return
        self.passed += 1
        print(f"ok     {name}", flush=True)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def imported(binding: str, tenant: str, base: str) -> str:
    out = subprocess.run(
        [SLUICE, "import", "wsdl", str(WSDL), "--binding", binding, "--tenant", tenant],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.replace("http://127.0.0.1:8700", base)


def canonical(element) -> tuple:
    """An element as (namespace URI + local name, attributes, text, children): prefixes and
    whitespace-only text do not matter."""
    attrs = tuple(sorted((k, v) for k, v in element.attrib.items()))
    text = (element.text or "").strip()
    return (element.tag, attrs, text, tuple(canonical(child) for child in element))


def body_of(envelope_bytes: bytes):
    root = etree.fromstring(envelope_bytes)
    body = [child for child in root if etree.QName(child).localname == "Body"]
    expect(len(body) == 1, f"one Body in {envelope_bytes!r}")
    return tuple(canonical(child) for child in body[0])


async def call_all(url: str, calls: list[tuple[str, dict]]) -> list:
    results = []
    async with Client(streamable_http_client(url), read_timeout_seconds=20) as client:
        for name, args in calls:
            results.append(await client.call_tool(name, args))
    return results


def main() -> int:
    report = Report()
    recorder, spyne_port = spyne_service.start()
    base = f"http://127.0.0.1:{spyne_port}"
    config = imported("soap11", "calc11", base) + "\n" + imported("soap12", "calc12", base)
    work = Path(tempfile.mkdtemp(prefix="sluice-soap-interop."))
    (work / "sluice.toml").write_text(config)
    port = free_port()
    sluice = subprocess.Popen(
        [SLUICE, "serve", "--config", str(work / "sluice.toml"), "--listen", f"127.0.0.1:{port}"],
        stdout=open(work / "sluice.log", "w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
    )
    try:
        for _ in range(200):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).status == 200:
                    break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.1)
        else:
            print((work / "sluice.log").read_text(), file=sys.stderr)
            print("0 passed, 1 failed")
            return 1
        oracle = zeep.Client(str(WSDL))
        services = {"calc11": oracle.bind("Calculator", "Soap11"), "calc12": oracle.bind("Calculator", "Soap12")}
        cases = [
            ("add", "Add", {"a": 2, "b": 40}, 42),
            ("subtract", "Subtract", {"a": 2, "b": 40}, -38),
            ("multiply", "Multiply", {"a": -6, "b": 7}, -42),
            ("divide", "Divide", {"a": 7, "b": 2}, 3.5),
        ]
        for tenant, version, path in [("calc11", "1.1", "/calc11"), ("calc12", "1.2", "/calc12")]:
            url = f"http://127.0.0.1:{port}/runtime/{tenant}/app/mcp"
            for tool, operation, args, want in cases:
                def result(tool=tool, operation=operation, args=args, want=want) -> None:
                    [got] = anyio.run(call_all, url, [(tool, args)])
                    expect(not got.is_error, f"isError: {got.content}")
                    key = f"{tool}_result"
                    expect(got.structured_content == {key: want}, f"{got.structured_content!r}, want {{{key!r}: {want!r}}}")
                    expect(type(got.structured_content[key]) is type(want), f"typed as {type(want).__name__}")

                report.check(f"SOAP {version} {tool}: typed result", result)

                def envelope(tool=tool, operation=operation, args=args, path=path) -> None:
                    headers, sent = recorder.last(path)
                    zeep_envelope = oracle.create_message(services[tenant], operation, **args)
                    want = body_of(etree.tostring(zeep_envelope))
                    got = body_of(sent)
                    expect(got == want, f"sluice {got!r}\n   zeep {want!r}")
                    env_ns = etree.QName(etree.fromstring(sent)).namespace
                    expect(env_ns == (SOAP11 if version == "1.1" else SOAP12), f"envelope {env_ns}")
                    if version == "1.1":
                        expect(headers.get("soapaction") == f'"urn:sluice:calculator#{operation}"', f"SOAPAction {headers}")
                        expect(headers["content-type"].startswith("text/xml"), headers["content-type"])
                    else:
                        expect("soapaction" not in headers, f"SOAPAction sent on 1.2: {headers}")
                        expect(
                            headers["content-type"].startswith("application/soap+xml")
                            and f'action="urn:sluice:calculator#{operation}"' in headers["content-type"],
                            headers["content-type"],
                        )

                report.check(f"SOAP {version} {tool}: envelope equals zeep's", envelope)

            def division_by_zero(url=url) -> None:
                [got] = anyio.run(call_all, url, [("divide", {"a": 1, "b": 0})])
                expect(got.is_error, f"not an error: {got}")
                content = got.structured_content or {}
                expect(content.get("faultstring") == "division by zero", f"{content!r}")
                text = got.content[0].text
                expect("division by zero" in text and "Traceback" not in text, text)
                expect(base not in json.dumps(content) and base not in text, "the endpoint leaked")

            report.check(f"SOAP {version} divide by zero: fault as isError with the service's message", division_by_zero)

            def validation(url=url, version=version) -> None:
                [got] = anyio.run(call_all, url, [("add", {"a": 2**40, "b": 1})])
                expect(got.is_error, f"not an error: {got}")
                if version == "1.1":
                    content = got.structured_content or {}
                    expect(str(content.get("faultcode", "")).startswith("Client"), f"{content!r}")
                else:
                    # spyne 2.14 answers a 1.2 validation failure with a bare 500 (no envelope).
                    expect("status 500" in got.content[0].text, got.content[0].text)

            report.check(f"SOAP {version} an out-of-range xs:int: the service's refusal as isError", validation)
    finally:
        sluice.terminate()
        sluice.wait(timeout=10)
    line = f"{report.passed} passed, {report.failed} failed"
    print(line)
    if SUMMARY:
        Path(SUMMARY).write_text(line + "\n")
    return 0 if report.failed == 0 and report.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
