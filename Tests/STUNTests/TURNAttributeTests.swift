import Testing
import TestSupport
@testable import STUN

@Suite struct TURNAttributeTests {
    @Test func turnAttributesRoundTrip() throws {
        let peer = try #require(SocketAddress(host: "192.0.2.15", port: 32853))
        let relayed = try #require(SocketAddress(host: "2001:db8::1", port: 49152))
        let original = STUNMessage(method: .channelBind, messageClass: .request, attributes: [
            .realm("example.org"), .nonce("f//499k954d6OL34oL9FSTvy64sA"), .lifetime(600),
            .requestedTransport(17), .xorPeerAddress(peer), .xorRelayedAddress(relayed),
            .channelNumber(0x4001), .data([1, 2, 3, 4, 5]),
        ])
        let key = LongTermCredentials.key(username: "u", realm: "example.org", password: "p")
        let bytes = original.encode(integrityKey: key, fingerprint: true)
        #expect(STUNMessage.verifyIntegrity(bytes, key: key))
        let parsed = try STUNMessage(parsing: bytes)
        #expect(parsed.method == .channelBind)
        #expect(Array(parsed.attributes.dropLast(2)) == original.attributes)
        #expect(parsed.realm == "example.org")
        #expect(parsed.lifetime == 600)
        #expect(parsed.xorPeerAddress == peer)
        #expect(parsed.xorRelayedAddress == relayed)
        #expect(parsed.channelNumber == 0x4001)
        #expect(parsed.data == [1, 2, 3, 4, 5])
        #expect(STUNMethod.allocate.description == "Allocate")
    }

    /// The long-term key of a plain ASCII user, checked against `printf 'u:test:p' | openssl md5`.
    @Test func longTermKeyIsMD5OfUserRealmPassword() {
        let key = LongTermCredentials.key(username: "u", realm: "test", password: "p")
        #expect(key.count == 16)
        #expect(toHex(key) == "5c8157fd8ef5f6b56629b7399d83ce25")
    }

    @Test func bindingIsToldApartFromTURNMethods() {
        for (method, binding) in [(STUNMethod.binding, true), (.allocate, false), (.refresh, false), (.data, false), (.channelBind, false)] {
            for cls in [STUNClass.request, .successResponse, .errorResponse, .indication] {
                let bytes = STUNMessage(method: method, messageClass: cls).encode(fingerprint: false)
                #expect(bytes.withUnsafeBytes { STUNMessage.isBinding($0) } == binding, "\(method) \(cls)")
            }
        }
        #expect([UInt8]([0x40, 0, 0, 0]).withUnsafeBytes { STUNMessage.isBinding($0) } == false)
    }

    @Test func malformedTURNAttributesAreErrors() {
        // LIFETIME with 3 bytes.
        var bytes: [UInt8] = [0x00, 0x03, 0x00, 0x08, 0x21, 0x12, 0xA4, 0x42] + [UInt8](repeating: 7, count: 12)
        bytes += [0x00, 0x0D, 0x00, 0x03, 1, 2, 3, 0]
        #expect(throws: STUNError.self) { try STUNMessage(parsing: bytes) }
    }
}
