import Media
import RTP
import SeededRandom
import Testing
@testable import RTPMedia

/// Compares without dumping megabytes of bytes on failure.
func sameData(_ frames: [EncodedFrame], _ expected: [[UInt8]]) -> Bool {
    guard frames.count == expected.count else {
        Issue.record("got \(frames.count) frames, expected \(expected.count)")
        return false
    }
    if let i = frames.indices.first(where: { frames[$0].data != expected[$0] }) {
        Issue.record("frame \(i) differs (\(frames[i].data.count) vs \(expected[i].count) bytes)")
        return false
    }
    return true
}

@Suite struct VideoJitterBufferTests {
    let start = ContinuousClock.now

    /// Drains every ready frame.
    func drain(_ jb: inout VideoJitterBuffer) -> [EncodedFrame] {
        var out: [EncodedFrame] = []
        while let f = jb.pollFrame() { out.append(f) }
        return out
    }

    @Test(arguments: [VideoCodecType.h264, .vp8])
    func reorderingRestoresOrder(codec: VideoCodecType) {
        var sender = SimulatedVideoSender(codec: codec)
        var packets: [RTPPacket] = []
        for i in 0..<60 { packets += sender.nextFrame(keyframe: i == 0, at: start) }
        // Shuffle within windows of 7 packets.
        var rng = SplitMix64(seed: 3)
        var shuffled: [RTPPacket] = []
        for chunk in stride(from: 0, to: packets.count, by: 7) {
            shuffled += packets[chunk..<min(chunk + 7, packets.count)].shuffled(using: &rng)
        }
        #expect(shuffled != packets)
        var jb = VideoJitterBuffer(codec: codec)
        var delivered: [EncodedFrame] = []
        for (i, p) in shuffled.enumerated() {
            jb.insert(p, arrival: start + .milliseconds(i))
            delivered += drain(&jb)
        }
        #expect(sameData(delivered, sender.sent.map(\.data)))
        #expect(delivered.map(\.rtpTimestamp) == sender.sent.map(\.timestamp))
        #expect(delivered.first?.isKeyframe == true)
        // Timestamps wrapped through zero on the way (first is 0xFFFF0000).
        #expect(delivered.contains { $0.rtpTimestamp < 0x1000 })
        #expect(jb.statistics.framesAssembled == 60 && jb.statistics.framesDropped == 0)
        #expect(jb.statistics.packetsLost == 0)
        let r1 = jb.pollKeyframeRequest(now: start + .seconds(1))
        #expect(!r1)
    }

    /// Chrome-style H.264: AUD, SPS, PPS as single NAL packets, an FU-A IDR, padding-only
    /// packets (probing) between frames; all but the first packet of each frame arrive in
    /// reverse order.
    @Test func singleNALParameterSetsAndPaddingPackets() throws {
        var rng = SplitMix64(seed: 12)
        let aud: [UInt8] = [0x09, 0x10]
        let sps = makeNAL(type: 7, size: 12, rng: &rng), pps = makeNAL(type: 8, size: 4, rng: &rng)
        let idr = makeNAL(type: 5, size: 3000, rng: &rng)
        let slice = makeNAL(type: 1, size: 500, rng: &rng)
        var packetizer = H264Packetizer()
        let fus = packetizer.packetize(annexB: annexB([idr]), maxPayloadSize: 1000).map(\.bytes)
        let frames: [[[UInt8]]] = [[aud, sps, pps] + fus, [aud, slice], [], [aud, slice]]  // [] = padding
        var sequencer = RTPSequencer(ssrc: 1, payloadType: 102, initialSequenceNumber: 7)
        var packets: [[RTPPacket]] = []
        for (i, payloads) in frames.enumerated() {
            let list = payloads.isEmpty ? [RTPPayload(bytes: [], marker: false)]
                : payloads.enumerated().map { RTPPayload(bytes: $1, marker: $0 == payloads.count - 1) }
            packets.append(sequencer.packets(for: list, timestamp: UInt32(i) * 3000))
        }
        var jb = VideoJitterBuffer(codec: .h264)
        var delivered: [EncodedFrame] = []
        for group in packets {
            for p in group.prefix(1) + group.dropFirst().reversed() { jb.insert(p, arrival: start) }
            delivered += drain(&jb)
        }
        #expect(sameData(delivered, [annexB([aud, sps, pps, idr]), annexB([aud, slice]), annexB([aud, slice])]))
        #expect(delivered.map(\.isKeyframe) == [true, false, false])
        #expect(jb.statistics.packetsLost == 0 && jb.statistics.framesDropped == 0)
        let pli = jb.pollKeyframeRequest(now: start)
        #expect(!pli)
    }

    @Test func duplicatesAreIgnored() {
        var sender = SimulatedVideoSender()
        var jb = VideoJitterBuffer(codec: .h264)
        var delivered: [EncodedFrame] = []
        var count = 0
        for i in 0..<20 {
            for p in sender.nextFrame(keyframe: i == 0, at: start) {
                #expect(jb.insert(p, arrival: start) == .accepted)
                let again = jb.insert(p, arrival: start)
                #expect(again == .duplicate || again == .late)
                count += 1
                delivered += drain(&jb)
            }
        }
        #expect(sameData(delivered, sender.sent.map(\.data)))
        #expect(jb.statistics.packetsDuplicated + jb.statistics.packetsLate == count)
        #expect(jb.statistics.packetsReceived == 2 * count)
    }

    /// 5% loss on media, NACKs and retransmissions; the sender answers NACKs from its
    /// RTPHistory after the one-way delay. Every frame must arrive, in order, without a PLI.
    @Test(arguments: [(VideoCodecType.h264, Duration.zero), (.vp8, .zero), (.h264, .milliseconds(6))])
    func nackLoopRecoversRandomLoss(codec: VideoCodecType, nackDelay: Duration) {
        var sender = SimulatedVideoSender(codec: codec, seed: 21)
        var responder = NackResponder(rtt: .milliseconds(60))
        var toReceiver = SimulatedLink<[UInt8]>(delay: .milliseconds(30), jitter: .milliseconds(4), loss: 0.05, seed: 5)
        var toSender = SimulatedLink<[UInt16]>(delay: .milliseconds(30), loss: 0.05, seed: 6)
        var config = VideoJitterBuffer.Configuration(codec: codec)
        config.nackDelay = nackDelay
        var jb = VideoJitterBuffer(configuration: config)
        jb.rtt = .milliseconds(60)
        var delivered: [EncodedFrame] = []
        var now = start
        let frames = 300
        var sentFrames = 0
        var plis = 0
        var resent = 0
        while now < start + .seconds(Int64(frames) / 30 + 2) {
            if sentFrames < frames, now >= start + .microseconds(Int64(sentFrames) * 33_333) {
                for p in sender.nextFrame(keyframe: sentFrames == 0, at: now) { toReceiver.send(p.serialize(), now: now) }
                sentFrames += 1
            }
            for (_, nack) in toSender.arrived(by: now) {
                for (_, bytes) in responder.respond(to: nack, from: sender.history, now: now) {
                    toReceiver.send(bytes, now: now)
                    resent += 1
                }
            }
            for (at, bytes) in toReceiver.arrived(by: now) { jb.insert(bytes, arrival: at) }
            if let nack = jb.pollNack(now: now) { toSender.send(nack, now: now) }
            if jb.pollKeyframeRequest(now: now) { plis += 1 }
            delivered += drain(&jb)
            now += .milliseconds(2)
        }
        let stats = jb.statistics
        #expect(delivered.count == frames)
        #expect(sameData(delivered, sender.sent.map(\.data)))
        #expect(plis == 0 && stats.plisSent == 0)
        #expect(stats.nacksSent > 0 && resent > 0 && stats.retransmissionsReceived > 0)
        #expect(stats.framesDropped == 0)
        #expect(jb.nextDeadline() == nil)
        if nackDelay > .zero {
            // Waiting a few ms before the first NACK spares requests for merely reordered packets.
            #expect(stats.packetsLate + stats.packetsDuplicated <= 2)
        }
    }

    /// A frame lost for good: PLI within the recovery deadline, nothing after the hole until
    /// the keyframe the sender makes in answer, then everything again.
    /// An outage: 3 s of the sender's frames lost, then its packets again (delta frames, as
    /// Chromium sends after its path returns). The keyframe is asked for on the first packet
    /// back, not after the recovery deadline (0.6 s) spent NACKing what went into the outage.
    @Test func aGapAfterAnOutageAsksForAKeyframeAtOnce() throws {
        var sender = SimulatedVideoSender(seed: 34)
        var jb = VideoJitterBuffer(codec: .h264)
        jb.rtt = .milliseconds(20)
        var now = start
        for i in 0..<30 {
            for p in sender.nextFrame(keyframe: i == 0, at: now) { jb.insert(p, arrival: now) }
            now += .microseconds(33_333)
        }
        #expect(drain(&jb).count == 30)
        for _ in 0..<90 { _ = sender.nextFrame(keyframe: false, at: now); now += .microseconds(33_333) }   // lost
        for p in sender.nextFrame(keyframe: false, at: now) { jb.insert(p, arrival: now) }
        let pli = jb.pollKeyframeRequest(now: now)
        let nacks = jb.pollNack(now: now)
        #expect(pli, "a PLI due on the first packet after the outage")
        #expect(nacks == nil, "nothing NACKed of what went into the outage: \(nacks ?? [])")
        #expect(drain(&jb).isEmpty)
    }

    @Test func unrecoverableLossRequestsKeyframeAndResumesThere() throws {
        var sender = SimulatedVideoSender(seed: 33)
        var jb = VideoJitterBuffer(codec: .h264)
        jb.rtt = .milliseconds(50)
        var delivered: [EncodedFrame] = []
        var now = start
        var pliAt: ContinuousClock.Instant?
        var gapAt: ContinuousClock.Instant?
        var keyframeAnswer: Int?
        for i in 0..<60 {
            let makeKey = i == 0 || (pliAt != nil && keyframeAnswer == nil)
            if makeKey && i > 0 { keyframeAnswer = i }
            let packets = sender.nextFrame(keyframe: makeKey, at: now)
            if i != 10 {  // frame 10 never arrives, and NACKs for it go unanswered
                for p in packets { jb.insert(p, arrival: now) }
                if i == 11 { gapAt = now }
            }
            _ = jb.pollNack(now: now)
            if pliAt == nil, jb.pollKeyframeRequest(now: now) { pliAt = now }
            delivered += drain(&jb)
            // Between frames, honor the buffer's own deadlines.
            let next = now + .microseconds(33_333)
            while let d = jb.nextDeadline(), d < next {
                now = max(now, d)
                _ = jb.pollNack(now: now)
                if pliAt == nil, jb.pollKeyframeRequest(now: now) { pliAt = now }
            }
            now = next
        }
        let pli = try #require(pliAt)
        let gap = try #require(gapAt)
        #expect(pli - gap <= .milliseconds(600))
        let key = try #require(keyframeAnswer)
        let expectedFrames = Array(0..<10) + Array(key..<60)
        #expect(sameData(delivered, expectedFrames.map { sender.sent[$0].data }))
        #expect(delivered[10].isKeyframe)
        #expect(jb.statistics.plisSent == 1)
        #expect(jb.statistics.framesDropped == key - 11)
        #expect(!jb.isWaitingForKeyframe)
    }

    @Test func streamStartingWithoutKeyframeAsksForOne() {
        var sender = SimulatedVideoSender(seed: 44)
        var jb = VideoJitterBuffer(codec: .h264)
        var delivered: [EncodedFrame] = []
        var now = start
        var pliFrame: Int?
        for i in 0..<10 {
            for p in sender.nextFrame(keyframe: i == 5, at: now) { jb.insert(p, arrival: now) }
            if pliFrame == nil, jb.pollKeyframeRequest(now: now) { pliFrame = i }
            delivered += drain(&jb)
            now += .milliseconds(33)
        }
        #expect(pliFrame == 0)  // as soon as a whole delta frame shows the stream is not decodable
        #expect(sameData(delivered, (5..<10).map { sender.sent[$0].data }))
        #expect(delivered.first?.isKeyframe == true)
    }

    /// A keyframe through a narrow link: its packets trickle in for longer than the request
    /// interval. No new request while they keep coming (it would only restart the wait), one
    /// when they stop without completing it.
    @Test func noRepeatedRequestWhileTheKeyframeIsArriving() {
        var sender = SimulatedVideoSender(seed: 45)
        var jb = VideoJitterBuffer(codec: .h264)
        var now = start
        for p in sender.nextFrame(keyframe: false, at: now) { jb.insert(p, arrival: now) }
        let first = jb.pollKeyframeRequest(now: now)
        #expect(first)
        let key = sender.nextFrame(keyframe: true, size: 20_000, at: now)
        #expect(key.count >= 12)
        var asked: [Int] = []
        // One packet every 80 ms (about 120 kbit/s of 1200-byte packets), the last one lost.
        for (i, p) in key.dropLast().enumerated() {
            now += .milliseconds(80)
            jb.insert(p, arrival: now)
            if jb.pollKeyframeRequest(now: now) { asked.append(i) }
        }
        #expect(asked.isEmpty, "asked again while the keyframe arrived: after packets \(asked)")
        let lastPacket = now
        let early = jb.pollKeyframeRequest(now: lastPacket + .milliseconds(299))
        #expect(!early)
        let due = jb.pollKeyframeRequest(now: lastPacket + .milliseconds(300))
        #expect(due)
        #expect(jb.statistics.plisSent == 2)
    }

    @Test func decoderFailureDropsUntilKeyframe() {
        var sender = SimulatedVideoSender(seed: 55)
        var jb = VideoJitterBuffer(codec: .vp8)
        sender.codec = .vp8
        var now = start
        var delivered: [EncodedFrame] = []
        for i in 0..<12 {
            for p in sender.nextFrame(keyframe: i == 0 || i == 8, at: now) { jb.insert(p, arrival: now) }
            delivered += drain(&jb)
            if i == 3 {
                jb.decoderFailed()
                let r2 = jb.pollKeyframeRequest(now: now)
                #expect(r2)
                let r3 = jb.pollKeyframeRequest(now: now + .milliseconds(100))
                #expect(!r3)  // rate-limited
            }
            now += .milliseconds(33)
        }
        #expect(sameData(delivered, (Array(0...3) + Array(8..<12)).map { sender.sent[$0].data }))
        #expect(jb.statistics.framesDropped == 4)
    }

    @Test(arguments: [UInt16(40_000), UInt16(10)])
    func sequenceJumpIsAStreamRestart(newFirstSequence: UInt16) {
        var sender = SimulatedVideoSender(firstSequence: 20_000, seed: 66)
        var jb = VideoJitterBuffer(codec: .h264)
        var now = start
        var delivered: [EncodedFrame] = []
        for i in 0..<10 {
            for p in sender.nextFrame(keyframe: i == 0, at: now) { jb.insert(p, arrival: now) }
            delivered += drain(&jb)
            now += .milliseconds(33)
        }
        // The sender restarts: new sequence space and timestamps.
        var restarted = SimulatedVideoSender(firstSequence: newFirstSequence, firstTimestamp: 123_456, seed: 67)
        for i in 0..<10 {
            for p in restarted.nextFrame(keyframe: i == 0, at: now) { jb.insert(p, arrival: now) }
            delivered += drain(&jb)
            now += .milliseconds(33)
        }
        #expect(sameData(delivered, sender.sent.map(\.data) + restarted.sent.map(\.data)))
        #expect(jb.statistics.streamRestarts == 1)
        #expect(jb.statistics.plisSent == 0)
        let r4 = jb.pollKeyframeRequest(now: now)
        #expect(!r4)
    }

    @Test func oneStrayPacketDoesNotRestartTheStream() {
        var sender = SimulatedVideoSender(seed: 77)
        var jb = VideoJitterBuffer(codec: .h264)
        var delivered: [EncodedFrame] = []
        for i in 0..<10 {
            for p in sender.nextFrame(keyframe: i == 0, at: start) { jb.insert(p, arrival: start) }
            if i == 4 {
                let stray = RTPPacket(payloadType: 96, sequenceNumber: 30_000, timestamp: 5, ssrc: 0x1234_5678, payload: [0x65, 1])
                #expect(jb.insert(stray, arrival: start) == .heldForConfirmation)
            }
            delivered += drain(&jb)
        }
        #expect(delivered.count == 10)
        #expect(jb.statistics.streamRestarts == 0)
    }

    @Test func capacityLimitDropsOldestAndCounts() {
        var config = VideoJitterBuffer.Configuration(codec: .h264)
        config.maxPackets = 50
        var jb = VideoJitterBuffer(configuration: config)
        var sender = SimulatedVideoSender(seed: 88)
        var now = start
        for i in 0..<40 {
            var packets = sender.nextFrame(keyframe: i == 0, size: i == 0 ? 4000 : 2400, at: now)
            if i == 1 { packets.removeFirst() }  // a hole that is never filled
            for p in packets { jb.insert(p, arrival: now) }
            #expect(jb.bufferedPackets <= 50)
            while jb.pollFrame() != nil {}
            now += .milliseconds(1)
        }
        #expect(jb.statistics.packetsDroppedOverflow > 0)
        #expect(jb.statistics.framesDropped > 0)
        let r5 = jb.pollKeyframeRequest(now: now)
        #expect(r5)
    }

    /// 10 000 random datagrams, a third of them RTP headers of our SSRC with garbage payloads:
    /// every one is accounted for and nothing traps.
    @Test(arguments: [VideoCodecType.h264, .vp8])
    func garbageIsCountedNeverTraps(codec: VideoCodecType) {
        var rng = SplitMix64(seed: 1234)
        var jb = VideoJitterBuffer(codec: codec)
        var now = start
        var unparseable = 0, wrongSSRC = 0
        var sequence = UInt16.random(in: 0...UInt16.max, using: &rng)
        for i in 0..<10_000 {
            var bytes = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if i % 3 == 0 {
                // Mostly nearby sequence numbers, sometimes wild; random marker and timestamps.
                sequence &+= rng.chance(0.05) ? UInt16.random(in: 0...UInt16.max, using: &rng) : UInt16.random(in: 0...3, using: &rng)
                let header = RTPPacket(marker: rng.chance(0.3), payloadType: 96, sequenceNumber: sequence,
                                       timestamp: UInt32(i / 9) * 3000, ssrc: 0xCAFE).serialize()
                bytes = header + bytes
            }
            switch jb.insert(bytes, arrival: now) {
            case .unparseable: unparseable += 1
            case .wrongSSRC: wrongSSRC += 1
            default: break
            }
            _ = jb.pollNack(now: now)
            _ = jb.pollKeyframeRequest(now: now)
            if rng.chance(0.01) { jb.decoderFailed() }
            while jb.pollFrame() != nil {}
            now += .microseconds(500)
        }
        let stats = jb.statistics
        #expect(unparseable + wrongSSRC + stats.packetsReceived == 10_000)
        #expect(stats.packetsDiscarded >= unparseable + wrongSSRC)
        #expect(stats.malformedPackets > 0)
        #expect(jb.bufferedPackets <= jb.configuration.maxPackets)
    }
}
