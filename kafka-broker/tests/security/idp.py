"""A tiny OAuth 2 identity provider for the OAUTHBEARER tests: GET /jwks answers the JWKS file
(read at each request, so a test can rotate keys), POST /token is the client-credentials grant
(HTTP Basic client id and secret; the answer is the token file of that client, which the test
signed). Serves HTTPS on one port when given a certificate and plain HTTP on another, and
writes "HTTPS_PORT HTTP_PORT" to --port-file once both listen."""

import argparse
import base64
import http.server
import json
import ssl
import threading

p = argparse.ArgumentParser()
p.add_argument("--port-file", required=True)
p.add_argument("--jwks", required=True)
p.add_argument("--cert")
p.add_argument("--key")
p.add_argument("--client", action="append", default=[], help="ID:SECRET:TOKEN_FILE")
args = p.parse_args()

clients = {}
for c in args.client:
    cid, secret, token_file = c.split(":", 2)
    clients[cid] = (secret, token_file)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body):
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path != "/jwks":
            return self.answer(404, {"error": "not_found"})
        with open(args.jwks, "rb") as f:
            self.answer(200, f.read())

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        form = self.rfile.read(length).decode()
        if self.path != "/token" or "grant_type=client_credentials" not in form:
            return self.answer(400, {"error": "invalid_request"})
        auth = self.headers.get("Authorization", "")
        try:
            cid, secret = base64.b64decode(auth.removeprefix("Basic ")).decode().split(":", 1)
        except Exception:
            return self.answer(401, {"error": "invalid_client"})
        if clients.get(cid, (None,))[0] != secret:
            return self.answer(401, {"error": "invalid_client", "error_description": "bad secret"})
        with open(clients[cid][1]) as f:
            token = f.read().strip()
        self.answer(200, {"access_token": token, "token_type": "Bearer", "expires_in": 300})

    def log_message(self, *a):
        pass


servers = []
https = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if args.cert:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    https.socket = ctx.wrap_socket(https.socket, server_side=True)
plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
for s in (https, plain):
    threading.Thread(target=s.serve_forever, daemon=True).start()
with open(args.port_file + ".tmp", "w") as f:
    f.write(f"{https.server_address[1]} {plain.server_address[1]}")
import os  # noqa: E402
os.rename(args.port_file + ".tmp", args.port_file)
threading.Event().wait()
