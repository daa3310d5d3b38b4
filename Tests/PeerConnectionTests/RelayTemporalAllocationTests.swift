import Foundation
import Locks
@testable import PeerConnection
import Relay
import RTP
import RTPMedia
import SessionSupport
import Testing
import Transport

/// A weak viewer of one VP8 L1T3 stream (no simulcast), on simulated time: the publisher's
/// layers are TL0 ~290, TL1 ~290 and TL2 ~290 kbit/s (30 fps, 0 2 1 2); A on a clean link,
/// B behind 400 kbit/s with a 25-packet FIFO. B's estimate carries the base layer alone: the
/// relay sends it a quarter of the frames — every one of those — where before it sent the
/// whole stream into the queue; A gets everything. When the limit lifts B is back on all frames.
@Suite struct RelayTemporalAllocationTests {
    /// Packets of a frame by layer (1200 bytes each): a period of 4 frames is 12 packets.
    static let packetsByLayer = [4, 4, 2]

    struct Arrival { let second: Int; let at: ContinuousClock.Instant; let layer: UInt8?; let marker: Bool; let sequence: UInt16; let timestamp: UInt32 }

    @Test func aWeakViewerGetsTheBaseLayerWholeAndComesBack() async throws {
        let sim = Simulation(seed: 3)
        let relayLog = Locked<[String]>([])
        let relay = try sim.relay { line in relayLog.withLock { $0.append(line) } }
        let publisher = try sim.peer { $0.mediaPipeline = false }
        let sending = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.vp8])
        try await sim.exchange(relay, publisher, endpoint: "whip", stream: "tl")
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)

        var frame = 0, second = 0, pictureID: UInt16 = 0, tl0: UInt8 = 0
        let now = Locked(0)
        func run(seconds: Int) {
            for _ in 0..<seconds {
                for _ in 0..<30 {
                    let position = frame % 4, keyframe = frame % 64 == 0
                    let layer: UInt8 = [0, 2, 1, 2][position]
                    if layer == 0 { tl0 &+= 1 }
                    let count = Self.packetsByLayer[Int(layer)]
                    for p in 0..<count {
                        let d = VP8PayloadDescriptor(nonReference: layer == 2, startOfPartition: p == 0, pictureID: pictureID,
                                                     tl0PictureIndex: tl0, temporalLayerIndex: layer, layerSync: position == 1 || position == 2)
                        var payload = d.serialize()
                        payload += p == 0 && keyframe ? [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01] : [0x01, 0x00, 0x00]
                        payload += [UInt8](repeating: 0xAB, count: 1200 - payload.count)
                        sending.sender.send(payloadType: pt, payload: payload, timestamp: UInt32(frame) * 3000, marker: p == count - 1)
                        sim.advance(by: .microseconds(33_333 / Int64(count) - 1))
                    }
                    sim.advance(by: .microseconds(Int64(count)))
                    frame += 1
                    pictureID = (pictureID + 1) & 0x7FFF
                }
                second += 1
                now.withLock { $0 = second }
            }
        }
        run(seconds: 2)

        let viewers = try await TwoViewers(sim, relay: relay, stream: "tl") { p, at in
            let d = try? VP8PayloadDescriptor.parse(p.payload).0
            return Arrival(second: now.value, at: at, layer: d?.temporalLayerIndex, marker: p.marker,
                           sequence: p.sequenceNumber, timestamp: p.timestamp)
        }
        let views = viewers.views, link = viewers.bLink
        sim.loop.perform { link.downlink.conditions = LinkConditions(rate: 400_000, queue: .packets(25)) }
        let limited = second
        run(seconds: 20)
        sim.loop.perform { link.downlink.conditions = LinkConditions() }
        let lifted = second
        run(seconds: 12)

        /// Each frame once (its last packet; padding and resends repeat packets), by second.
        func frames(_ view: Locked<[Arrival]>) -> [Arrival] {
            var seen = Set<UInt32>()
            return view.value.filter { $0.marker && seen.insert($0.timestamp).inserted }
        }
        func perSecond(_ view: Locked<[Arrival]>, _ range: Range<Int>) -> [Int] {
            let all = frames(view)
            return range.map { s in all.filter { $0.second == s }.count }
        }
        let a = perSecond(views[0], limited..<second)
        #expect(a.allSatisfy { $0 >= 29 }, "A's frames a second: \(a)")
        // B: from 5 s after the limit on, the base layer whole (7–8 frames a second: 30/4), and
        // no frame above it (into the full queue they would only delay the base frames).
        let settled = (limited + 5)..<lifted
        let b = perSecond(views[1], settled)
        let bLayers = Set(frames(views[1]).filter { settled.contains($0.second) }.compactMap(\.layer))
        let switches = relayLog.value.filter { $0.contains(" layer ") }.joined(separator: "\n")
        #expect(abs(b.reduce(0, +) * 4 - settled.count * 30) <= 8, "B's frames a second while limited: \(b)\n\(switches)")
        var detector = FreezeDetector()
        for f in frames(views[1]) where settled.contains(f.second) { detector.frameRendered(at: f.at) }
        #expect(detector.freezeCount == 0, "B froze \(detector.freezeCount) times (\(detector.totalFreezesDuration))")
        #expect(bLayers == [0], "B got layers \(bLayers.sorted()) while limited")
        // Every base frame B was sent arrived: the link carried what it was given.
        let baseSent = frames(views[0]).filter { settled.contains($0.second) && $0.layer == 0 }.count
        let baseGot = frames(views[1]).filter { settled.contains($0.second) && $0.layer == 0 }.count
        #expect(baseGot >= baseSent - 2, "B got \(baseGot) of \(baseSent) base frames")
        // Back on every frame within 10 s of the lift.
        let after = perSecond(views[1], lifted..<second)
        let back = after.firstIndex { $0 >= 29 }
        #expect(back.map { $0 <= 10 } ?? false, "B after the lift: \(after)\n\(switches)")
        let streams = String(decoding: await sim.request(relay, "GET", "/api/v1/streams/").body, as: UTF8.self)
        #expect(streams.contains("\"temporal_layer\""), "\(streams)")
        await viewers.close()
        await publisher.close()
        await relay.stop()
    }
}

/// A weak viewer of one H.264 L1T3 stream as OpenH264 writes it (nal_ref_idc 3 1 0 for TL0,
/// TL1, TL2): the relay can leave out the non-referenced pictures (TL2, half the frames) and
/// nothing below. The stream is ~1 Mbit/s, what it references ~430 kbit/s (TL0 4 packets a
/// frame, TL1 2, TL2 4); B behind 600 kbit/s gets every referenced picture — 15 a second, no
/// W3C freeze — and none of the rest; A gets everything; after the lift B is back on all frames.
@Suite struct RelayH264TemporalAllocationTests {
    struct Arrival { let second: Int; let at: ContinuousClock.Instant; let referenced: Bool; let marker: Bool; let sequence: UInt16 }

    @Test func aWeakViewerGetsTheReferencedPicturesWhole() async throws {
        let sim = Simulation(seed: 4)
        let switches = Locked<[String]>([])
        let relay = try sim.relay { line in if line.contains(" layer ") { switches.withLock { $0.append(line) } } }
        let publisher = try sim.peer { $0.mediaPipeline = false }
        let sending = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        try await sim.exchange(relay, publisher, endpoint: "whip", stream: "h264tl")
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)

        var frame = 0
        let second = Locked(0)
        func run(seconds: Int) {
            for _ in 0..<seconds {
                for _ in 0..<30 {
                    let keyframe = frame % 64 == 0
                    let layer = keyframe ? 0 : [0, 2, 1, 2][frame % 4]
                    let nri: UInt8 = [3, 1, 0][layer], count = [4, 2, 4][layer]
                    for p in 0..<count {
                        // Single-NAL slices; the first of a picture has first_mb_in_slice 0.
                        var payload: [UInt8] = [nri << 5 | (keyframe ? 5 : 1), p == 0 ? 0x88 : 0x08]
                        payload += [UInt8](repeating: 0xAB, count: 1200 - payload.count)
                        sending.sender.send(payloadType: pt, payload: payload, timestamp: UInt32(frame) * 3000, marker: p == count - 1)
                        sim.advance(by: .microseconds(33_333 / Int64(count) - 1))
                    }
                    sim.advance(by: .microseconds(Int64(count)))
                    frame += 1
                }
                second.withLock { $0 += 1 }
            }
        }
        run(seconds: 2)
        let viewers = try await TwoViewers(sim, relay: relay, stream: "h264tl", codec: .h264) { p, at in
            Arrival(second: second.value, at: at, referenced: (p.payload.first ?? 0) & 0x60 != 0, marker: p.marker, sequence: p.sequenceNumber)
        }
        let link = viewers.bLink
        sim.loop.perform { link.downlink.conditions = LinkConditions(rate: 600_000, queue: .packets(25)) }
        let limited = second.value
        run(seconds: 20)
        sim.loop.perform { link.downlink.conditions = LinkConditions() }
        let lifted = second.value
        run(seconds: 12)

        func frames(_ view: Locked<[Arrival]>) -> [Arrival] {
            var seen = Set<UInt16>()
            return view.value.filter { $0.marker && seen.insert($0.sequence).inserted }
        }
        let log = switches.value.joined(separator: "\n")
        let a = frames(viewers.views[0]), b = frames(viewers.views[1])
        let aPerSecond = (limited..<second.value).map { s in a.filter { $0.second == s }.count }
        #expect(aPerSecond.allSatisfy { $0 >= 29 }, "A's frames a second: \(aPerSecond)")
        let settled = (limited + 5)..<lifted
        let bSettled = b.filter { settled.contains($0.second) }
        #expect(bSettled.allSatisfy { $0.referenced }, "B got \(bSettled.filter { !$0.referenced }.count) unreferenced pictures while limited\n\(log)")
        #expect(abs(bSettled.count - settled.count * 15) <= 3, "B got \(bSettled.count) pictures in \(settled.count) s\n\(log)")
        var detector = FreezeDetector()
        for f in bSettled { detector.frameRendered(at: f.at) }
        #expect(detector.freezeCount == 0, "B froze \(detector.freezeCount) times (\(detector.totalFreezesDuration))\n\(log)")
        let after = (lifted..<second.value).map { s in b.filter { $0.second == s }.count }
        let back = after.firstIndex { $0 >= 29 }
        print("H.264 weak viewer: B while limited \(settled.map { s in bSettled.filter { $0.second == s }.count }), after the lift \(after)\n\(log)")
        #expect(back.map { $0 <= 10 } ?? false, "B after the lift: \(after)\n\(log)")
        await viewers.close()
        await publisher.close()
        await relay.stop()
    }
}
