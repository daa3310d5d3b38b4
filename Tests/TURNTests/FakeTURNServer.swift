import STUN
@testable import TURN

/// Builds the server's side of scripted exchanges: real STUN responses, signed with the
/// long-term key MD5(user:realm:pass) the way coturn signs them.
struct FakeTURNServer {
    var realm = "test"
    var nonce = "nonce-1"
    var password = "p"
    var key: [UInt8] { LongTermCredentials.key(username: "u", realm: realm, password: password) }
    static let address = SocketAddress(ip: .v4(0x7f00_0001), port: 3478)
    static let relayed = SocketAddress(ip: .v4(0x7f00_0001), port: 50000)
    static let mapped = SocketAddress(ip: .v4(0x7f00_0001), port: 40000)

    func parse(_ bytes: [UInt8]?) throws -> STUNMessage {
        let bytes = try requireBytes(bytes)
        return try STUNMessage(parsing: bytes)
    }

    func requireBytes(_ bytes: [UInt8]?) throws -> [UInt8] {
        guard let bytes else { throw TestFailure("the client sent nothing") }
        return bytes
    }

    /// Whether the request is signed with this server's key (what a real server checks).
    func verifies(_ bytes: [UInt8]) -> Bool {
        STUNMessage.verifyIntegrity(bytes, key: key)
    }

    func challenge(_ request: STUNMessage, code: Int = 401, reason: String = "Unauthorized") -> [UInt8] {
        STUNMessage(method: request.method, messageClass: .errorResponse, transactionID: request.transactionID,
                    attributes: [.errorCode(code: code, reason: reason), .realm(realm), .nonce(nonce)])
            .encode(fingerprint: false)
    }

    func error(_ request: STUNMessage, code: Int, reason: String) -> [UInt8] {
        STUNMessage(method: request.method, messageClass: .errorResponse, transactionID: request.transactionID,
                    attributes: [.errorCode(code: code, reason: reason)])
            .encode(integrityKey: key, fingerprint: true)
    }

    func success(_ request: STUNMessage, _ attributes: [STUNAttribute] = []) -> [UInt8] {
        STUNMessage(method: request.method, messageClass: .successResponse, transactionID: request.transactionID,
                    attributes: attributes).encode(integrityKey: key, fingerprint: true)
    }

    func allocated(_ request: STUNMessage, lifetime: UInt32 = 600) -> [UInt8] {
        success(request, [.xorRelayedAddress(Self.relayed), .xorMappedAddress(Self.mapped), .lifetime(lifetime)])
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension TURNClient {
    /// Every datagram waiting for the server.
    func drain() -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let t = pollTransmit() { out.append(t) }
        return out
    }

    func drainEvents() -> [TURNEvent] {
        var out: [TURNEvent] = []
        while let e = pollEvent() { out.append(e) }
        return out
    }
}
