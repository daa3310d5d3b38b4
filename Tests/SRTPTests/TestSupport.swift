@testable import SRTP
import SeededRandom

/// An RTP packet: version 2, optional CSRCs and a one-byte-header extension.
func rtpPacket(seq: UInt16, ssrc: UInt32, timestamp: UInt32 = 0x01020304, payloadType: UInt8 = 96,
               csrcs: [UInt32] = [], extensionWords: Int? = nil, payload: [UInt8]) -> [UInt8] {
    var p: [UInt8] = [0x80 | UInt8(csrcs.count) | (extensionWords == nil ? 0 : 0x10), payloadType,
                      UInt8(seq >> 8), UInt8(seq & 0xFF)]
    for v in [timestamp, ssrc] + csrcs {
        p += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }
    if let words = extensionWords {
        p += [0xBE, 0xDE, UInt8(words >> 8), UInt8(words & 0xFF)]
        for w in 0..<words { p += [0x10, UInt8(w), 0, 0] }
    }
    return p + payload
}

/// An RTCP sender report (PT 200) followed by `extra` bytes standing for more compound parts.
func rtcpPacket(ssrc: UInt32, extra: [UInt8] = []) -> [UInt8] {
    var body: [UInt8] = [UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)]
    body += [UInt8](repeating: 0x11, count: 20)  // NTP, RTP timestamp, counts
    body += extra
    let words = (body.count + 4) / 4 - 1
    return [0x80, 200, UInt8(words >> 8), UInt8(words & 0xFF)] + body
}

let allProfiles: [SRTPProfile] = [.aes128CmHmacSha1_80, .aeadAes128Gcm]

struct KeyPair {
    let aKey: [UInt8], aSalt: [UInt8], bKey: [UInt8], bSalt: [UInt8]
    init(_ profile: SRTPProfile, seed: UInt64 = 7) {
        var r = SplitMix64(seed: seed)
        aKey = r.bytes(profile.keyLength); aSalt = r.bytes(profile.saltLength)
        bKey = r.bytes(profile.keyLength); bSalt = r.bytes(profile.saltLength)
    }

    /// Side A protects with its keys and unprotects B's packets; side B the mirror.
    func sideA(_ profile: SRTPProfile, _ backend: SRTPBackend) throws -> SRTPSession {
        try SRTPSession(profile: profile, localKey: aKey, localSalt: aSalt, remoteKey: bKey, remoteSalt: bSalt, backend: backend)
    }
    func sideB(_ profile: SRTPProfile, _ backend: SRTPBackend) throws -> SRTPSession {
        try SRTPSession(profile: profile, localKey: bKey, localSalt: bSalt, remoteKey: aKey, remoteSalt: aSalt, backend: backend)
    }
}

/// Sequence numbers crossing a wrap (so the ROC becomes 1), with local reordering and a NACK
/// re-send of an earlier number.
let wrapSequence: [UInt16] = {
    var seqs: [UInt16] = []
    var s: UInt16 = 65_500
    for _ in 0..<80 { seqs.append(s); s &+= 1 }
    // Reorder pairs and re-send one packet.
    seqs.swapAt(10, 11); seqs.swapAt(40, 42); seqs.swapAt(35, 37)
    seqs.insert(seqs[30], at: 45)
    return seqs
}()
