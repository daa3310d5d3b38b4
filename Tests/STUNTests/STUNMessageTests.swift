import SeededRandom
import Testing
@testable import STUN

@Suite struct STUNMessageTests {
    let key = Array("secret-password-for-tests".utf8)

    @Test func roundTripEveryAttribute() throws {
        let v4 = try #require(SocketAddress(host: "203.0.113.7", port: 4242))
        let v6 = try #require(SocketAddress(host: "2001:db8::9", port: 9))
        let original = STUNMessage(messageClass: .errorResponse, attributes: [
            .xorMappedAddress(v4), .xorMappedAddress(v6), .mappedAddress(v4), .mappedAddress(v6),
            .username("abcd:efgh"), .errorCode(code: 487, reason: "Role Conflict"), .priority(0x6e7f_1eff),
            .useCandidate, .iceControlling(0x0102_0304_0506_0708), .iceControlled(.max),
            .software("SwiftRTC"), .unknown(type: 0xC001, value: [1, 2, 3]),
        ])
        let bytes = original.encode(integrityKey: key, fingerprint: true)
        #expect(bytes.count % 4 == 0)
        #expect(STUNMessage.isSTUN(bytes))
        #expect(STUNMessage.verifyIntegrity(bytes, key: key))
        #expect(STUNMessage.verifyFingerprint(bytes))
        let parsed = try STUNMessage(parsing: bytes)
        #expect(parsed.method == .binding)
        #expect(parsed.messageClass == .errorResponse)
        #expect(parsed.transactionID == original.transactionID)
        #expect(Array(parsed.attributes.dropLast(2)) == original.attributes)
        #expect(parsed.attributes.suffix(2).map(\.type) == [0x0008, 0x8028])
        #expect(parsed.errorCode?.code == 487)
        #expect(parsed.errorCode?.reason == "Role Conflict")
        #expect(parsed.useCandidate)
    }

    @Test func everyClassAndSomeMethodsRoundTrip() throws {
        for cls in [STUNClass.request, .indication, .successResponse, .errorResponse] {
            for method in [STUNMethod.binding, STUNMethod(rawValue: 0x003), STUNMethod(rawValue: 0xABC)] {
                let m = STUNMessage(method: method, messageClass: cls)
                let parsed = try STUNMessage(parsing: m.encode(fingerprint: false))
                #expect(parsed.method == method)
                #expect(parsed.messageClass == cls)
            }
        }
        // Binding success response is 0x0101 on the wire, error response 0x0111.
        #expect(STUNMessage(messageClass: .successResponse).encode()[0...1] == [0x01, 0x01])
        #expect(STUNMessage(messageClass: .errorResponse).encode()[0...1] == [0x01, 0x11])
    }

    @Test func integrityWithoutFingerprintAndViceVersa() throws {
        let m = STUNMessage(messageClass: .request, attributes: [.username("a:b")])
        let onlyMI = m.encode(integrityKey: key, fingerprint: false)
        #expect(STUNMessage.verifyIntegrity(onlyMI, key: key))
        #expect(!STUNMessage.verifyFingerprint(onlyMI))
        let onlyFP = m.encode(integrityKey: nil, fingerprint: true)
        #expect(!STUNMessage.verifyIntegrity(onlyFP, key: key))
        #expect(STUNMessage.verifyFingerprint(onlyFP))
        let bare = m.encode(fingerprint: false)
        #expect(bare.count == 20 + 8)
    }

    @Test func badIntegrityDetected() {
        let m = STUNMessage(messageClass: .request, attributes: [.username("a:b"), .priority(5)])
        var bytes = m.encode(integrityKey: key)
        #expect(!STUNMessage.verifyIntegrity(bytes, key: Array("other".utf8)))
        bytes[26] ^= 0xff   // USERNAME value byte
        #expect(!STUNMessage.verifyIntegrity(bytes, key: key))
    }

    @Test func attributesAfterIntegrityAreIgnoredButFingerprintKept() throws {
        // Build by hand: USERNAME, MESSAGE-INTEGRITY, SOFTWARE (ignored), FINGERPRINT.
        let base = STUNMessage(messageClass: .request, attributes: [.username("x:y")]).encode(integrityKey: key, fingerprint: false)
        var bytes = base + [0x80, 0x22, 0x00, 0x04, 0x61, 0x62, 0x63, 0x64]
        STUNMessage.setLength(&bytes, bytes.count - 20 + 8)
        let crc = CRC32.checksum(bytes) ^ 0x5354_554E
        bytes += [0x80, 0x28, 0x00, 0x04] + crc.bigEndianBytes
        let parsed = try STUNMessage(parsing: bytes)
        #expect(parsed.software == nil)
        #expect(parsed.attributes.map(\.type) == [0x0006, 0x0008, 0x8028])
        #expect(STUNMessage.verifyIntegrity(bytes, key: key))
        #expect(STUNMessage.verifyFingerprint(bytes))
    }

    @Test func crc32KnownValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }
}

@Suite struct STUNParseErrorTests {
    let valid = STUNMessage(messageClass: .request, attributes: [.username("abcd:efgh"), .priority(1)]).encode(integrityKey: [1, 2, 3])

    @Test func tooShort() {
        #expect(throws: STUNError(.truncated, offset: 5, "datagram of 5 bytes is shorter than the 20-byte header")) {
            try STUNMessage(parsing: [0, 1, 0, 0, 0x21])
        }
        #expect(!STUNMessage.isSTUN([0, 1, 0, 0, 0x21]))
        #expect(valid.withUnsafeBytes { STUNMessage.isSTUN($0) })
    }

    @Test func notSTUN() {
        var bytes = valid
        bytes[0] = 0x80   // looks like RTP
        #expect(!STUNMessage.isSTUN(bytes))
        #expect(throws: STUNError.self) { try STUNMessage(parsing: bytes) }
        do { _ = try STUNMessage(parsing: bytes) } catch { #expect(error.kind == .notSTUN); #expect(error.offset == 0) }
        var badCookie = valid
        badCookie[5] = 0
        do { _ = try STUNMessage(parsing: badCookie) } catch { #expect(error.kind == .notSTUN); #expect(error.offset == 4) }
    }

    @Test func lengthMismatch() {
        var bytes = valid
        bytes[3] &+= 4
        do {
            _ = try STUNMessage(parsing: bytes)
            Issue.record("should throw")
        } catch {
            #expect(error.kind == .badLength)
            #expect(error.offset == 2)
            #expect(error.description.contains("offset 2"))
        }
        var odd = valid
        odd[3] &+= 1
        do { _ = try STUNMessage(parsing: odd); Issue.record("should throw") } catch { #expect(error.kind == .badLength) }
    }

    @Test func truncatedAttributeReportsOffset() {
        // Attribute at offset 20 claims 200 bytes.
        var bytes = valid
        bytes[22] = 0
        bytes[23] = 200
        do {
            _ = try STUNMessage(parsing: bytes)
            Issue.record("should throw")
        } catch {
            #expect(error.kind == .truncated)
            #expect(error.offset == 20)
        }
    }

    @Test func truncatedDatagramThrowsWhereverCut() {
        // Every prefix that keeps a consistent header length but loses bytes must throw, not trap.
        for cut in 0..<valid.count {
            var bytes = Array(valid.prefix(cut))
            if bytes.count >= 4 { STUNMessage.setLength(&bytes, max(0, bytes.count - 20) & ~3) }
            _ = try? STUNMessage(parsing: bytes)
        }
        #expect(throws: STUNError.self) { try STUNMessage(parsing: Array(valid.prefix(30))) }
    }

    @Test func malformedAttributeValues() {
        // PRIORITY with 2 bytes (padded to 4).
        var header: [UInt8] = [0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xa4, 0x42] + [UInt8](repeating: 7, count: 12)
        let badPriority = header + [0x00, 0x24, 0x00, 0x02, 0, 1, 0, 0]
        do { _ = try STUNMessage(parsing: badPriority); Issue.record("should throw") } catch {
            #expect(error.kind == .malformedAttribute)
            #expect(error.offset == 24)
        }
        // XOR-MAPPED-ADDRESS with family 3.
        header[3] = 12
        let badFamily = header + [0x00, 0x20, 0x00, 0x08, 0, 3, 0, 1, 1, 2, 3, 4]
        do { _ = try STUNMessage(parsing: badFamily); Issue.record("should throw") } catch {
            #expect(error.kind == .malformedAttribute)
            #expect(error.offset == 25)
        }
    }

    @Test func attributeAfterFingerprintRejected() {
        var bytes = STUNMessage(messageClass: .request).encode(fingerprint: true) + [0x80, 0x22, 0, 0]
        STUNMessage.setLength(&bytes, bytes.count - 20)
        do { _ = try STUNMessage(parsing: bytes); Issue.record("should throw") } catch {
            #expect(error.kind == .misplacedAttribute)
            #expect(error.offset == 28)
        }
    }

    @Test func garbageNeverTraps() {
        var rng = SplitMix64(seed: 42)
        for i in 0..<3000 {
            let length = Int(rng.next() % 120)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if i % 2 == 0, bytes.count >= 20 {
                // Make half of them look like STUN so the attribute walker is exercised.
                bytes[0] &= 0x3f
                bytes.replaceSubrange(4..<8, with: [0x21, 0x12, 0xa4, 0x42])
                STUNMessage.setLength(&bytes, (bytes.count - 20))
            }
            fuzzSTUN(bytes)
        }
        fuzzSTUN(RFC5769.request)
        fuzzSTUN(RFC5769.responseIPv6)
        fuzzSTUN(valid)
        // Mutations of valid messages reach deeper into the attribute decoders.
        let seeds = [RFC5769.request, RFC5769.responseIPv4, RFC5769.responseIPv6, valid]
        for i in 0..<4000 {
            var bytes = seeds[i % seeds.count]
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let index = 20 + Int(rng.next() % UInt64(bytes.count - 20))
                bytes[index] = UInt8(truncatingIfNeeded: rng.next())
            }
            fuzzSTUN(bytes)
        }
    }
}

