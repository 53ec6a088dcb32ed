#!/usr/bin/env python3
"""An OTLP/HTTP receiver that keeps what arrives, for forward_e2e_test.

Usage: otlp_http_recorder.py PORT DIR

Listens on 127.0.0.1:PORT (Python's own http.server, not Kiln's code) and
writes each POST's body to DIR/NNN.bin and its path, Content-Type and
authorization header to DIR/NNN.meta (one per line), NNN counting from 000
in arrival order. A body containing b"request_2" is answered 400 Bad Request
(a request the destination refuses as invalid); every other one 200 with an
empty ExportProfilesServiceResponse, as OTLP/HTTP answers.
"""
import http.server
import os
import sys
import threading

port, out_dir = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as collectors serve it

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if b"request_2" in body:
            answer = b"refused for the test"
            self.send_response(400)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        with lock:
            n = len([f for f in os.listdir(out_dir) if f.endswith(".bin")])
            base = os.path.join(out_dir, "%03d" % n)
            with open(base + ".meta", "w") as meta:
                meta.write("%s\n%s\n%s\n" % (self.path, self.headers.get("Content-Type", ""),
                                             self.headers.get("Authorization", "")))
            # The body last: a test waiting for NNN.bin then finds its meta.
            with open(base + ".tmp", "wb") as f:
                f.write(body)
            os.rename(base + ".tmp", base + ".bin")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
