import Testing
@testable import RTP

@Suite struct DemuxTests {
    @Test func rfc7983Ranges() {
        #expect(classifyPacket([0x00, 0x01]) == .stun)
        #expect(classifyPacket([0x01, 0x01]) == .stun)
        #expect(classifyPacket([0x03]) == .stun)
        #expect(classifyPacket([22, 0xFE, 0xFD]) == .dtls)     // handshake
        #expect(classifyPacket([20]) == .dtls)
        #expect(classifyPacket([63]) == .dtls)
        #expect(classifyPacket([0x80, 96]) == .rtp)
        #expect(classifyPacket([0x80, 0xE0]) == .rtp)         // marker + PT 96
        #expect(classifyPacket([0x80, 200]) == .rtcp)
        #expect(classifyPacket([0x81, 201]) == .rtcp)
        #expect(classifyPacket([0x8F, 206]) == .rtcp)
        #expect(classifyPacket([0xBF, 192]) == .rtcp)
        #expect(classifyPacket([0xBF, 223]) == .rtcp)
        #expect(classifyPacket([0x80, 224]) == .rtp)
        #expect(classifyPacket([0x80]) == .unknown)
        #expect(classifyPacket([]) == .unknown)
        #expect(classifyPacket([4]) == .unknown)
        #expect(classifyPacket([64, 0]) == .unknown)          // TURN channel
        #expect(classifyPacket([192, 0]) == .unknown)
    }

    @Test func rawBufferOverload() {
        let bytes: [UInt8] = [0x80, 200, 0, 1]
        #expect(bytes.withUnsafeBytes { classifyPacket($0) } == .rtcp)
    }
}

@Suite struct UnwrapperTests {
    @Test func wrapsForward() {
        var u = SequenceNumberUnwrapper()
        #expect(u.unwrap(65534) == 65534)
        #expect(u.unwrap(65535) == 65535)
        #expect(u.unwrap(0) == 65536)
        #expect(u.unwrap(1) == 65537)
    }

    @Test func reorderingAcrossTheWrap() {
        var u = SequenceNumberUnwrapper()
        #expect(u.unwrap(2) == 2)
        #expect(u.unwrap(65535) == -1)         // arrived late, from before the start
        #expect(u.unwrap(3) == 3)
        var v = SequenceNumberUnwrapper()
        _ = v.unwrap(65530)
        #expect(v.unwrap(5) == 65541)
        #expect(v.unwrap(65533) == 65533)      // late packet from before the wrap
        #expect(v.unwrap(6) == 65542)
        #expect(v.peek(7) == 65543)
        #expect(v.lastUnwrapped == 65542)
    }

    @Test func manyCycles() {
        var u = SequenceNumberUnwrapper()
        var expected: Int64 = 0
        var seq: UInt16 = 0
        for _ in 0..<(5 * 65536 / 1000) {
            #expect(u.unwrap(seq) == expected)
            seq &+= 1000
            expected += 1000
        }
    }

    @Test func timestamps() {
        var u = TimestampUnwrapper()
        #expect(u.unwrap(0xFFFF_FF00) == 0xFFFF_FF00)
        #expect(u.unwrap(0x0000_0100) == 0x1_0000_0100)
        #expect(u.unwrap(0xFFFF_FFFF) == 0xFFFF_FFFF)
    }
}

@Suite struct NTPTests {
    @Test func fromSeconds() {
        #expect(NTPTime.ntp(secondsSince1900: 1.5) == 0x1_8000_0000)
        #expect(NTPTime.ntp(secondsSince1900: -3) == 0)
        #expect(NTPTime.ntp(unixSeconds: 0) == NTPTime.unixEpochOffset << 32)
        #expect(NTPTime.secondsSince1900(0x2_4000_0000) == 2.25)
    }

    @Test func compactMiddleBits() {
        #expect(NTPTime.compact(0x1234_5678_9ABC_DEF0) == 0x5678_9ABC)
        #expect(NTPTime.compact(.milliseconds(1500)) == 0x1_8000)
        #expect(NTPTime.compact(.seconds(-1)) == 0)
        #expect(NTPTime.duration(compact: 0x2_4000) == .milliseconds(2250))
    }

    @Test func roundTripTime() {
        // SR sent at compact 0x10000 (1 s), receiver held it 0.5 s, report arrives at 1.75 s → 250 ms.
        let rtt = NTPTime.roundTripTime(arrival: 0x1_C000, lastSR: 0x1_0000, delaySinceLastSR: 0x8000)
        #expect(rtt == .milliseconds(250))
        #expect(NTPTime.roundTripTime(arrival: 5, lastSR: 0, delaySinceLastSR: 0) == nil)
        #expect(NTPTime.roundTripTime(arrival: 0x1_0000, lastSR: 0x1_0000, delaySinceLastSR: 0x8000) == nil)
    }
}

@Suite struct ExtensionCodecTests {
    @Test func uris() {
        #expect(RTPExtensionURI.sdesMID == "urn:ietf:params:rtp-hdrext:sdes:mid")
        #expect(RTPExtensionURI.absSendTime == "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time")
        #expect(RTPExtensionURI.transportWideCC == "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01")
        #expect(RTPExtensionURI.audioLevel == "urn:ietf:params:rtp-hdrext:ssrc-audio-level")
        #expect(RTPExtensionURI.videoOrientation == "urn:3gpp:video-orientation")
        #expect(RTPExtensionURI.rtpStreamID == "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id")
        #expect(RTPExtensionURI.repairedRTPStreamID == "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id")
    }

    @Test func mid() {
        #expect(RTPExtensionCodec.encodeMID("video0") == Array("video0".utf8))
        #expect(RTPExtensionCodec.decodeMID(Array("audio".utf8)) == "audio")
        #expect(RTPExtensionCodec.decodeMID([0x31, 0, 0]) == "1")
        #expect(RTPExtensionCodec.decodeMID([]) == nil)
        #expect(RTPExtensionCodec.decodeMID([0xFF, 0xFE]) == nil)
    }

    @Test func absSendTime() {
        #expect(RTPExtensionCodec.encodeAbsSendTime(seconds: 1.0) == [0x04, 0x00, 0x00])
        #expect(RTPExtensionCodec.encodeAbsSendTime(seconds: 64.5) == [0x02, 0x00, 0x00])   // wraps at 64 s
        #expect(RTPExtensionCodec.decodeAbsSendTime([0x04, 0x00, 0x00]) == 0x04_0000)
        #expect(RTPExtensionCodec.decodeAbsSendTime([1, 2]) == nil)
        #expect(RTPExtensionCodec.absSendTimeSeconds(0x06_0000) == 1.5)
        // From NTP: 1.5 s → bits 14…37.
        #expect(RTPExtensionCodec.absSendTime(ntp: 0x1_8000_0000) == 0x06_0000)
    }

    @Test func transportSequence() {
        #expect(RTPExtensionCodec.encodeTransportSequence(0x1234) == [0x12, 0x34])
        #expect(RTPExtensionCodec.decodeTransportSequence([0xFF, 0xFE]) == 0xFFFE)
        #expect(RTPExtensionCodec.decodeTransportSequence([1]) == nil)
    }

    @Test func audioLevelAndOrientation() {
        #expect(RTPExtensionCodec.encodeAudioLevel(AudioLevel(level: 30, voiceActivity: true)) == [0x9E])
        #expect(RTPExtensionCodec.decodeAudioLevel([0x7F]) == AudioLevel(level: 127, voiceActivity: false))
        #expect(RTPExtensionCodec.decodeAudioLevel([]) == nil)
        let o = VideoOrientation(rotation: .degrees270, horizontalFlip: true, backFacingCamera: true)
        #expect(RTPExtensionCodec.encodeVideoOrientation(o) == [0x0F])
        #expect(RTPExtensionCodec.decodeVideoOrientation([0x01]) == VideoOrientation(rotation: .degrees90))
    }
}
