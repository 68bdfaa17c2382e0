"""The official MCP Python SDK client (mcp==2.3.0) against sluice over TLS.

Makes a test CA, a server certificate for localhost/127.0.0.1 and two client certificates with
`cryptography`, starts two `sluice serve` over HTTPS (client certificates optional, then
required), and checks through the SDK's own client that:
  - a full session works over https with the CA as the only trust anchor (discover, tools/list,
    tools/call);
  - a client certificate the client application registers authenticates (tenant `tls` has no
    other credential), one it does not register is refused (401 before any session);
  - with client certificates required, a client without one cannot even connect.

Env (set by run.sh): SLUICE_BIN (the binary), INTEROP_API (the stub downstream's base URL),
INTEROP_SUMMARY (file the `N passed, N failed` line is appended to).
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

warnings.simplefilter("ignore")

SLUICE = os.environ["SLUICE_BIN"]
API = os.environ["INTEROP_API"].rstrip("/")
SUMMARY = os.environ.get("INTEROP_SUMMARY")
TIMEOUT = 20.0

ADA = {"id": "c-100", "name": "Ada Lovelace", "email": "ada@example.com"}

CONFIG = """
[server]
post_framing = "json"

[server.tls]
cert = "{dir}/server.crt"
key = "{dir}/server.key"
client_ca = "{dir}/ca.crt"
client_auth = "{client_auth}"

[[tenant]]
id = "tls"

[[tenant.client]]
id = "agent"

[[tenant.client.certificate]]
subject = "agent-7"
principal = "robot-seven"

[[tenant.toolset]]
id = "crm"

[[tenant.toolset.tool]]
name = "get_customer"
description = "Fetch one customer by id."
downstream = {{ kind = "rest", method = "GET", url = "{api}/customers/{{customer_id}}", timeout_ms = 5000 }}

[[tenant.toolset.tool.input]]
source = "customer_id"
exposed = "id"
type = "string"
required = true
location = "path"

[[tenant.toolset.tool.output]]
source = "customer_id"
exposed = "id"

[[tenant.toolset.tool.output]]
source = "full_name"
exposed = "name"

[[tenant.toolset.tool.output]]
source = "contact.email_address"
exposed = "email"

[[tenant.assignment]]
client = "agent"
toolset = "crm"
"""


# === the test PKI ===


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    path.with_suffix(".key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_pki(dir: Path) -> None:
    """ca.crt, server.{crt,key} (localhost, 127.0.0.1), agent.{crt,key} (CN agent-7) and
    stranger.{crt,key} (CN stranger, same CA)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("sluice interop CA"))
        .issuer_name(_name("sluice interop CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (dir / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    def leaf(cn: str, usage, sans: list[x509.GeneralName]) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    _write(
        dir / "server",
        *leaf(
            "localhost",
            ExtendedKeyUsageOID.SERVER_AUTH,
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        ),
    )
    _write(dir / "agent", *leaf("agent-7", ExtendedKeyUsageOID.CLIENT_AUTH, []))
    _write(dir / "stranger", *leaf("stranger", ExtendedKeyUsageOID.CLIENT_AUTH, []))


def context(dir: Path, identity: str | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(dir / "ca.crt"))
    if identity:
        ctx.load_cert_chain(str(dir / f"{identity}.crt"), str(dir / f"{identity}.key"))
    return ctx


# === sluice ===


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(dir: Path, client_auth: str) -> tuple[subprocess.Popen, str]:
    config = dir / f"sluice-{client_auth}.toml"
    config.write_text(CONFIG.format(dir=dir, client_auth=client_auth, api=API))
    port = free_port()
    log = open(dir / f"sluice-{client_auth}.log", "wb")
    proc = subprocess.Popen(
        [SLUICE, "serve", "--config", str(config), "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"https://localhost:{port}"
    ctx = context(dir, "agent")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sluice ({client_auth}) exited: {(dir / f'sluice-{client_auth}.log').read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as raw:
                with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
                    if tls.recv(64).startswith(b"HTTP/1.1 200"):
                        return proc, base
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"sluice ({client_auth}) did not become healthy")


# === checks ===

passed = 0
failed = 0


def record(name: str, error: BaseException | None) -> None:
    global passed, failed
    if error is None:
        passed += 1
        print(f"PASS   tls: {name}", flush=True)
    else:
        failed += 1
        print(f"FAIL   tls: {name}: {type(error).__name__}: {error}", flush=True)


async def check(name: str, body) -> None:
    try:
        await asyncio.wait_for(body(), TIMEOUT)
        record(name, None)
    except BaseException as error:  # noqa: BLE001 - each failure is a verdict
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        record(name, error)


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def session(url: str, ctx: ssl.SSLContext) -> None:
    async with httpx2.AsyncClient(verify=ctx, timeout=httpx2.Timeout(10.0, read=30.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=10.0) as client:
            tools = await client.list_tools()
            expect([t.name for t in tools.tools] == ["get_customer"], f"tools {tools.tools}")
            result = await client.call_tool("get_customer", {"id": "c-100"})
            expect(not result.is_error, f"isError: {result.content}")
            expect(result.structured_content == ADA, f"structuredContent {result.structured_content}")


async def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sluice-tls-interop-") as tmp:
        dir = Path(tmp)
        make_pki(dir)
        procs = []
        try:
            optional, optional_base = start(dir, "optional")
            procs.append(optional)
            required, required_base = start(dir, "required")
            procs.append(required)
            url = f"{optional_base}/runtime/tls/agent/mcp"
            required_url = f"{required_base}/runtime/tls/agent/mcp"

            await check(
                "a registered client certificate: discover, tools/list, tools/call over https",
                lambda: session(url, context(dir, "agent")),
            )

            async def stranger() -> None:
                async with httpx2.AsyncClient(verify=context(dir, "stranger")) as http:
                    response = await http.post(
                        url,
                        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"accept": "application/json, text/event-stream"},
                    )
                    expect(response.status_code == 401, f"an unregistered certificate got {response.status_code}")

            await check("an unregistered client certificate -> 401", stranger)

            async def untrusted() -> None:
                try:
                    async with httpx2.AsyncClient(verify=ssl.create_default_context()) as http:
                        await http.get(f"{optional_base}/healthz")
                except httpx2.ConnectError:
                    return
                raise AssertionError("the test CA's server certificate was trusted without the CA")

            await check("the server certificate verifies only against the test CA", untrusted)

            async def required_missing() -> None:
                try:
                    async with httpx2.AsyncClient(verify=context(dir, None)) as http:
                        response = await http.get(f"{required_base}/healthz")
                except (httpx2.ConnectError, httpx2.ReadError, httpx2.RemoteProtocolError, ssl.SSLError) as error:
                    # TLS 1.3: the server's `certificate_required` alert reaches the client on
                    # its first read, after its side of the handshake completed.
                    text = str(error).upper()
                    expect("CERTIFICATE" in text or isinstance(error, httpx2.ConnectError), f"refused how? {error}")
                    return
                raise AssertionError(f"served without a client certificate: {response.status_code}")

            await check("client_auth = required, no certificate -> the connection is refused", required_missing)
            await check(
                "client_auth = required, the registered certificate -> a full SDK session",
                lambda: session(required_url, context(dir, "agent")),
            )
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if failed:
                for log in dir.glob("sluice-*.log"):
                    print(f"--- {log.name}\n{log.read_text()[-3000:]}", file=sys.stderr)
    line = f"{passed} passed, {failed} failed"
    print(line)
    if SUMMARY:
        with open(SUMMARY, "a") as out:
            out.write(line + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
