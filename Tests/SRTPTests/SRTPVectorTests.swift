import Testing
@testable import SRTP
import TestSupport

@Suite struct RFCVectorTests {
    @Test func aesCounterModeKeystreamRFC3711B2() throws {
        let key = hex("2B7E151628AED2A6ABF7158809CF4F3C")
        let iv = hex("F0F1F2F3F4F5F6F7F8F9FAFBFCFD0000")
        let stream = try KeyDerivation.keystream(key: key, iv: iv, length: 0xFF02 * 16)
        func block(_ i: Int) -> [UInt8] { Array(stream[i * 16..<(i + 1) * 16]) }
        #expect(block(0) == hex("E03EAD0935C95E80E166B16DD92B4EB4"))
        #expect(block(1) == hex("D23513162B02D0F72A43A2FE4A5F97AB"))
        #expect(block(2) == hex("41E95B3BB0A2E8DD477901E4FCA894C0"))
        #expect(block(0xFEFF) == hex("EC8CDF7398607CB0F2D21675EA9EA1E4"))
        #expect(block(0xFF00) == hex("362B7C3C6773516318A077D7FC5073AE"))
        #expect(block(0xFF01) == hex("6A2CC3787889374FBEB4C81B17BA6C44"))
    }

    @Test func keyDerivationRFC3711B3() throws {
        let key = hex("E1F97A0D3E018BE0D64FA32C06DE4139")
        let salt = hex("0EC675AD498AFEEBB6960B3AABE6")
        #expect(try KeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpEncryption, length: 16)
            == hex("C61E7A93744F39EE10734AFE3FF7A087"))
        #expect(try KeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpSalt, length: 14)
            == hex("30CBBC08863D8C85D49DB34A9AE1"))
        #expect(try KeyDerivation.derive(masterKey: key, masterSalt: salt, label: .rtpAuthentication, length: 94)
            == hex("""
                CEBE321F6FF7716B6FD4AB49AF256A156D38BAA48F0A0ACF3C34E2359E6CDBCE
                E049646C43D9327AD175578EF7227098 6371C10C9A369AC2F94A8C5FBCDDDC25
                6D6E919A48B610EF17C2041E47403576 6B68642C59BBFC2F34DB60DBDFB2
                """))
    }

    /// RFC 7714 §16.1.1 / §16.1.2 and §17: stated with session keys, so the OpenSSL engine is
    /// built directly from them.
    private func gcmEngine() throws -> OpenSSLSRTP {
        let key = hex("000102030405060708090a0b0c0d0e0f")
        let salt = hex("517569642070726f2071756f")  // "Quid pro quo"
        func keys(_ encrypting: Bool) throws -> OpenSSLKeys {
            try OpenSSLKeys(profile: .aeadAes128Gcm, sessionKey: key, sessionSalt: salt, authKey: [], encrypting: encrypting)
        }
        return OpenSSLSRTP(profile: .aeadAes128Gcm, rtpOut: try keys(true), rtcpOut: try keys(true),
                           rtpIn: try keys(false), rtcpIn: try keys(false))
    }

    @Test func gcmRTPRFC7714() throws {
        let engine = try gcmEngine()
        let plain = hex("8040f17b8041f8d35501a0b2") + Array("Gallia est omnis divisa in partes tres".utf8)
        let expected = hex("""
            8040f17b8041f8d35501a0b2 f24de3a3fb34de6cacba861c9d7e4bcabe633bd50d294e6f
            42a5f47a51c7d19b36de3adf8833 899d7f27beb16a9152cf765ee4390cce
            """)
        var buffer = plain + [UInt8](repeating: 0, count: 16)
        let n = try buffer.withUnsafeMutableBytes { b throws(SRTPError) in
            try engine.protectRTP(b.baseAddress!, length: plain.count, capacity: b.count)
        }
        #expect(Array(buffer[0..<n]) == expected)
        let m = try buffer.withUnsafeMutableBytes { b throws(SRTPError) in try engine.unprotectRTP(b.baseAddress!, length: n) }
        #expect(Array(buffer[0..<m]) == plain)
    }

    @Test func gcmRTCPRFC7714() throws {
        let engine = try gcmEngine()
        let protected = hex("""
            81c8000d4d61727363e94885dcdab67ca727d7662f6b7e997ff5c0f76c06f32dc676a5f1730d6fda4ce09b4686303ded0bb9275bc84aa45896cf4d2fc5abf87245d9eade800005d4
            """)
        let plain = hex("81c8000d4d617273 4e5450314e545032525450200000042a0000e9304c756e61 deadbeefdeadbeefdeadbeefdeadbeefdeadbeef")
        var buffer = protected
        let n = try buffer.withUnsafeMutableBytes { b throws(SRTPError) in try engine.unprotectRTCP(b.baseAddress!, length: b.count) }
        #expect(Array(buffer[0..<n]) == plain)

        // Re-protecting with the same SRTCP index (0x5d4) gives the published bytes back.
        engine.setLastRTCPIndex(0x5D3, ssrc: 0x4D61_7273)
        var out = plain + [UInt8](repeating: 0, count: 20)
        let k = try out.withUnsafeMutableBytes { b throws(SRTPError) in
            try engine.protectRTCP(b.baseAddress!, length: plain.count, capacity: b.count)
        }
        #expect(Array(out[0..<k]) == protected)
    }
}

/// SRTCP packets whose E flag is clear are authenticated but not encrypted (RFC 3711 §3.4,
/// RFC 7714 §9.3). Nothing here sends them, but both backends must read them.
@Suite struct UnencryptedSRTCPTests {
    private let masterKey = hex("00112233445566778899aabbccddeeff")

    @Test(arguments: [SRTPBackend.openssl, .libsrtp])
    func aesCmWithoutEncryptionFlag(backend: SRTPBackend) throws {
        let salt = hex("0102030405060708090a0b0c0d0e")
        let authKey = try KeyDerivation.derive(masterKey: masterKey, masterSalt: salt, label: .rtcpAuthentication, length: 20)
        let plain = rtcpPacket(ssrc: 0xABCD_0001, extra: [1, 2, 3, 4])
        let authenticated = plain + [0x00, 0x00, 0x00, 0x07]  // E = 0, index 7
        var mac = [UInt8](repeating: 0, count: 20)
        let key = try HMACSHA1.key(authKey)
        defer { HMACSHA1.free(key) }
        let ok = authenticated.withUnsafeBytes { a in
            [UInt8]().withUnsafeBufferPointer { none in
                mac.withUnsafeMutableBufferPointer { m in
                    HMACSHA1.compute(key, a.baseAddress!, count: a.count, suffix: none.baseAddress ?? UnsafePointer(bitPattern: 1)!,
                                     suffixCount: 0, into: m.baseAddress!)
                }
            }
        }
        #expect(ok)
        let packet = authenticated + mac[0..<10]
        let receiver = try SRTPSession(profile: .aes128CmHmacSha1_80, localKey: masterKey, localSalt: salt,
                                       remoteKey: masterKey, remoteSalt: salt, backend: backend)
        var forged = packet
        forged[9] ^= 1
        if backend == .libsrtp {
            // libsrtp2 refuses an E flag that disagrees with its AES-CM policy (srtp_err_status_cant_check).
            #expect(throws: SRTPError.badHeader) { try receiver.unprotectRTCP(packet) }
            return
        }
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTCP(forged) }
        #expect(try receiver.unprotectRTCP(packet) == plain)
    }

    @Test(arguments: [SRTPBackend.openssl, .libsrtp])
    func gcmWithoutEncryptionFlag(backend: SRTPBackend) throws {
        let salt = hex("0102030405060708090a0b0c")
        let key = try KeyDerivation.derive(masterKey: masterKey, masterSalt: salt, label: .rtcpEncryption, length: 16)
        let sessionSalt = try KeyDerivation.derive(masterKey: masterKey, masterSalt: salt, label: .rtcpSalt, length: 12)
        let ssrc: [UInt8] = [0xAB, 0xCD, 0x00, 0x02]
        let plain = rtcpPacket(ssrc: 0xABCD_0002, extra: [9, 9, 9, 9])
        let trailer: [UInt8] = [0x00, 0x00, 0x01, 0x00]  // E = 0, index 256
        var iv = [0, 0] + ssrc + [0, 0] + trailer
        for i in 0..<12 { iv[i] ^= sessionSalt[i] }
        let keys = try OpenSSLKeys(profile: .aeadAes128Gcm, sessionKey: key, sessionSalt: sessionSalt, authKey: [], encrypting: true)
        var tag = [UInt8](repeating: 0, count: 16)
        var scratch = [UInt8](repeating: 0, count: 16)
        let sealed = iv.withUnsafeBufferPointer { ivp in
            plain.withUnsafeBytes { aad in
                trailer.withUnsafeBufferPointer { t in
                    scratch.withUnsafeMutableBytes { s in
                        tag.withUnsafeMutableBytes { tg in
                            AESGCM.seal(keys.cipher, iv: ivp.baseAddress!, aad: aad.baseAddress!, aadCount: aad.count,
                                        aad2: t.baseAddress!, aad2Count: 4, data: s.baseAddress!, count: 0, tag: tg.baseAddress!)
                        }
                    }
                }
            }
        }
        #expect(sealed)
        let packet = plain + tag + trailer
        let receiver = try SRTPSession(profile: .aeadAes128Gcm, localKey: masterKey, localSalt: salt,
                                       remoteKey: masterKey, remoteSalt: salt, backend: backend)
        var forged = packet
        forged[10] ^= 1
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTCP(forged) }
        #expect(try receiver.unprotectRTCP(packet) == plain)
    }
}
