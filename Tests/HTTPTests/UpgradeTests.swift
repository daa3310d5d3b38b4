import Glibc
import Testing
@testable import HTTP

/// A handler taking over the connection after a 101: here an echo of raw bytes.
@Suite struct UpgradeTests {
    @Sendable static func echoUpgrade(_ request: HTTPRequest) -> HTTPUpgrade? {
        guard request.path == "/echo" else { return nil }
        guard request.headers["Upgrade"] == "echo" else { return .respond(.text(426, "upgrade to echo\n")) }
        return .accept(HTTPResponse(status: 101, headers: ["Upgrade": "echo", "Connection": "Upgrade"])) { connection in
            while case .data(let bytes) = connection.read(timeout: .seconds(10)) {
                guard connection.write(bytes) else { return }
            }
        }
    }

    @Test func handlerOwnsTheConnectionAfter101() async throws {
        try await withServer { server in
            server.upgradeHandler = Self.echoUpgrade
            let client = HTTPClient(timeout: .seconds(10))
            let (response, connection) = try await client.upgrade(url: "http://127.0.0.1:\(server.port)/echo", headers: ["Upgrade": "echo"])
            #expect(response.status == 101 && response.headers["Upgrade"] == "echo")
            let upgraded = try #require(connection)
            #expect(upgraded.write(Array("ping".utf8)))
            let echoed = try await offPool { upgraded.read(timeout: .seconds(10)) }
            #expect(echoed == .data(Array("ping".utf8)))
            upgraded.close()
            #expect(upgraded.write([1]) == false)

            // Not upgradable: the handler's answer; other paths: the normal handler.
            let refused = try await client.upgrade(url: "http://127.0.0.1:\(server.port)/echo", headers: ["Upgrade": "other"])
            #expect(refused.response.status == 426 && refused.response.text == "upgrade to echo\n" && refused.connection == nil)
            let plain = try await client.send(method: "GET", url: "http://127.0.0.1:\(server.port)/other")
            #expect(plain.text == "GET /other  ")
        }
    }

    /// Held WebSocket-style connections do not take plain requests' slots; their own budget
    /// full, one more upgrade gets 503.
    @Test func upgradedConnectionsHaveABudgetOfTheirOwn() async throws {
        try await withServer(limits: HTTPLimits(maxConnections: 1, maxUpgradedConnections: 2)) { server in
            server.upgradeHandler = Self.echoUpgrade
            let client = HTTPClient(timeout: .seconds(10))
            let url = "http://127.0.0.1:\(server.port)/echo"
            let first = try #require(try await client.upgrade(url: url, headers: ["Upgrade": "echo"]).connection)
            let second = try #require(try await client.upgrade(url: url, headers: ["Upgrade": "echo"]).connection)
            let plain = try await client.send(method: "GET", url: "http://127.0.0.1:\(server.port)/x")
            #expect(plain.status == 200)
            let third = try await client.upgrade(url: url, headers: ["Upgrade": "echo"])
            #expect(third.response.status == 503 && third.response.text == "too many upgraded (WebSocket) connections\n")
            #expect(third.connection == nil)
            // Both still work.
            #expect(second.write([42]))
            #expect(try await JoinableThread.offPool { second.read(timeout: .seconds(10)) } == .data([42]))
            first.close()
            second.close()
        }
    }

    /// Over TLS (Python's ssl in front of our server): many writes from other threads while
    /// the owner reads, each echoed back intact and in order.
    @Test func upgradedTLSConnectionReadsAndWritesFromDifferentThreads() async throws {
        try await withServer { server in
            server.upgradeHandler = Self.echoUpgrade
            try await withTLSServer(forwardingTo: server.port) { tls in
                let client = HTTPClient(timeout: .seconds(10), insecure: true)
                let (response, connection) = try await client.upgrade(url: "https://127.0.0.1:\(tls.port)/echo", headers: ["Upgrade": "echo"])
                #expect(response.status == 101)
                let upgraded = try #require(connection)
                let expected = (0..<200).flatMap { Array("message \($0);".utf8) }
                async let echoed = JoinableThread.offPool { () -> [UInt8] in
                    var received: [UInt8] = []
                    while received.count < expected.count, case .data(let bytes) = upgraded.read(timeout: .seconds(10)) {
                        received += bytes
                    }
                    return received
                }
                let writes = try await JoinableThread.offPool {
                    (0..<200).allSatisfy { upgraded.write(Array("message \($0);".utf8)) }
                }
                #expect(writes)
                #expect(try await echoed == expected)
                upgraded.close()
            }
        }
    }

    @Test func bytesSentWithTheRequestReachTheHandlerAndStopEndsIt() async throws {
        let server = try HTTPServer(host: "127.0.0.1", port: 0, handler: echoHandler)
        server.upgradeHandler = Self.echoUpgrade
        server.start()
        let raw = try RawConnection(port: server.port)
        try raw.send("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nearly")
        let fd = raw.fd
        let text = try await offPool { () -> String in
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1024)
            while !String(decoding: received, as: UTF8.self).hasSuffix("early") {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                received += buffer[0..<count]
            }
            return String(decoding: received, as: UTF8.self)
        }
        #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(text.hasSuffix("\r\n\r\nearly"))
        server.stop()   // returns although the upgraded connection is idle
        #expect(try await raw.readToEnd().isEmpty)
        #expect(server.threadCount == 0)
    }
}
