// A local HTTPS server for the client's TLS tests: Python 3's http.server behind its ssl module,
// with a self-signed P-256 certificate for 127.0.0.1 made by the openssl CLI. Listens on
// 127.0.0.1 only and exits when its stdin closes (so it cannot outlive a crashed test run).
import Foundation
import TestSupport
@testable import HTTP

final class TLSTestServer: @unchecked Sendable {  // fields fixed after init
    let port: UInt16
    private let process: Process
    private let stdin: Pipe
    private let directory: TempDir

    /// GET /redirect?to=URL answers 307 to URL; other GETs and POSTs answer 200 with
    /// "METHOD PATH BODY".
    private static let script = #"""
import http.server, ssl, sys, threading
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, body):
        if self.path.startswith("/redirect?to="):
            self.send_response(307)
            self.send_header("Location", self.path[len("/redirect?to="):])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = ("%s %s %s" % (self.command, self.path, body)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self): self.answer("")
    def do_POST(self): self.answer(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
    def log_message(self, *args): pass
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
"""#

    /// With a backend port: TLS terminated here, the bytes passed both ways to 127.0.0.1:PORT
    /// (for upgraded connections over TLS).
    private static let forwarder = #"""
import socket, ssl, sys, threading
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
def pipe(source, sink):
    try:
        while data := source.recv(65536): sink.sendall(data)
    except OSError: pass
    for s in (source, sink):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def serve(client):
    try: tls = context.wrap_socket(client, server_side=True)
    except OSError: return
    backend = socket.create_connection(("127.0.0.1", int(sys.argv[3])))
    threading.Thread(target=pipe, args=(tls, backend), daemon=True).start()
    pipe(backend, tls)
def accept():
    while True: threading.Thread(target=serve, args=(listener.accept()[0],), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
sys.stdin.read()
"""#

    /// Generates the certificate, starts the server and waits for the port it prints once listening.
    static func start(forwardingTo backend: UInt16? = nil) async throws -> TLSTestServer {
        try await offPool { try TLSTestServer(forwardingTo: backend) }
    }

    private init(forwardingTo backend: UInt16?) throws {
        directory = try TempDir("swiftrtc-tls")
        let cert = directory.path("cert.pem")
        let key = directory.path("key.pem")
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                             "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                             "-keyout", key, "-out", cert]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw TestFailure("openssl req exited with \(openssl.terminationStatus)") }

        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", backend == nil ? Self.script : Self.forwarder, cert, key] + (backend.map { [String($0)] } ?? [])
        stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The port line comes after listen(2): reading it is the readiness check.
        var line: [UInt8] = []
        while !line.contains(0x0A) {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        guard let port = UInt16(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw TestFailure("the TLS test server did not report a port (got \(String(decoding: line, as: UTF8.self)))")
        }
        self.port = port
    }

    func stop() async throws {
        try? stdin.fileHandleForWriting.close()
        try await offPool { [process, directory] in
            process.waitUntilExit()
            directory.cleanup()
        }
    }
}

func withTLSServer(forwardingTo backend: UInt16? = nil, _ body: (TLSTestServer) async throws -> Void) async throws {
    let server = try await TLSTestServer.start(forwardingTo: backend)
    do {
        try await body(server)
    } catch {
        try await server.stop()
        throw error
    }
    try await server.stop()
}
