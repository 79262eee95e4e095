"""How the test proxies (tests/holding_proxy.py, tests/client_differential.py) pass a
request to the host as it came, and the host's answer back as it came."""

import http.client
import http.server

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer",
              "upgrade", "proxy-authenticate", "proxy-authorization"}


def fetch(handler: http.server.BaseHTTPRequestHandler, host: str, port: int,
          timeout: float) -> tuple[http.client.HTTPResponse, bytes]:
    """The host's answer to the request `handler` is serving, and its body."""
    length = int(handler.headers.get("Content-Length") or 0)
    body = handler.rfile.read(length) if length else None
    headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
    upstream = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        upstream.request(handler.command, handler.path, body=body, headers=headers)
        answer = upstream.getresponse()
        return answer, answer.read()
    finally:
        upstream.close()


def relay(handler: http.server.BaseHTTPRequestHandler, answer: http.client.HTTPResponse,
          data: bytes) -> None:
    """`answer` sent back as the handler's own, framed anew."""
    handler.send_response(answer.status, answer.reason)
    for name, value in answer.getheaders():
        if name.lower() not in HOP_BY_HOP:
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(data)
