import Capture
import Foundation
import Locks
import Media
@testable import PeerConnection
import RTP
import SessionSupport
import Testing

/// A relay player's REMB is estimated from abs-send-time (aiortc's only way; Chromium's and
/// ours without transport-cc): RTP timestamps are the publisher's capture times, so its encoder
/// and pacer jitter read as queueing at every player. The relay answers abs-send-time to a
/// player it does not answer transport-wide-cc and stamps each forwarded packet as it leaves.
@Suite struct RelayAbsSendTimeTests {
    static let absSendTimeLine = "a=extmap:3 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"

    /// Our offer as aiortc makes it: abs-send-time (id 3), no transport-wide-cc.
    static func aiortcLike(_ sdp: String) -> String {
        var lines = sdp.components(separatedBy: "\r\n").filter { !$0.contains(RTPExtensionURI.transportWideCC) }
        if let i = lines.firstIndex(where: { $0.hasPrefix("m=video") }),
           let mid = lines[i...].firstIndex(where: { $0.hasPrefix("a=mid:") }) {
            lines.insert(absSendTimeLine, at: mid + 1)
        }
        return lines.joined(separator: "\r\n")
    }

    /// Chromium's: abs-send-time (id 2) next to transport-wide-cc.
    static func chromiumLike(_ sdp: String) -> String {
        var lines = sdp.components(separatedBy: "\r\n")
        if let i = lines.firstIndex(where: { $0.hasPrefix("m=video") }),
           let mid = lines[i...].firstIndex(where: { $0.hasPrefix("a=mid:") }) {
            lines.insert("a=extmap:2 \(RTPExtensionURI.absSendTime)", at: mid + 1)
        }
        return lines.joined(separator: "\r\n")
    }

    @Test("offers list abs-send-time on video they only receive: our encoders do not stamp it")
    func offeredOnReceiveOnlyVideo() async throws {
        let sim = Simulation()
        for (direction, listed) in [(TransceiverDirection.recvonly, true), (.sendonly, false), (.sendrecv, false)] {
            let pc = try sim.peer()
            _ = try await pc.addTransceiver(.audio, TransceiverInit(direction: direction))
            _ = try await pc.addTransceiver(.video, TransceiverInit(direction: direction))
            let sdp = try await pc.createOffer().sdp
            let video = try #require(sdp.range(of: "m=video")).lowerBound
            let audio = try #require(sdp.range(of: "m=audio")).lowerBound
            let videoSection = audio < video ? sdp[video...] : sdp[video..<audio]
            #expect(videoSection.contains("a=extmap:2 \(RTPExtensionURI.absSendTime)") == listed, "\(direction): \(sdp)")
            #expect(!sdp.replacingOccurrences(of: String(videoSection), with: "").contains(RTPExtensionURI.absSendTime))
            await pc.close()
        }
    }

    @Test("players offering abs-send-time get it on every video packet, as sent, with or without transport-cc offered")
    func stampsForwardedPackets() async throws {
        let sim = Simulation()
        let (relay, publisher, source, _) = try await sim.relayWithPublisher(stream: "ast")

        // (virtual seconds at arrival, abs-send-time value or nil) per video packet.
        let aiortc = try sim.peer(), chromium = try sim.peer()
        typealias Seen = [(at: Double, value: UInt32?)]
        let seen = [Locked<Seen>([]), Locked<Seen>([])]
        var answers: [String] = []
        let t0 = sim.loop.now
        for (i, (player, edit)) in [(aiortc, Self.aiortcLike), (chromium, Self.chromiumLike)].enumerated() {
            let pt = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly))
            answers.append(try await sim.exchange(player, with: relay, endpoint: "whep", stream: "ast", edit: edit))
            let id = pt.negotiatedHeaderExtensions.first { $0.uri == RTPExtensionURI.absSendTime }?.id
            let loop = sim.loop, log = seen[i]
            pt.receiver.onRTPBytes = { packet, _ in
                let value = id.flatMap { packet.extensionData(id: $0) }.flatMap(RTPExtensionCodec.decodeAbsSendTime)
                let d = (loop.now - t0).components
                let at = Double(d.seconds) + Double(d.attoseconds) / 1e18
                log.withLock { $0.append((at, value)) }
            }
        }
        #expect(answers[0].contains(Self.absSendTimeLine), "\(answers[0])")
        #expect(!answers[0].contains(RTPExtensionURI.transportWideCC))
        #expect(answers[1].contains("a=extmap:2 \(RTPExtensionURI.absSendTime)"), "\(answers[1])")
        #expect(!answers[1].contains(RTPExtensionURI.transportWideCC))

        let capturer = TestPatternCapturer()
        for n in 0..<90 {
            deliverFrames(patternFrames(capturer, count: 1, from: n, rotation: .r0), into: source, on: sim)
        }
        for log in seen {
            let stamped = log.withLock { $0 }
            #expect(stamped.count > 100, "player got \(stamped.count) packets")
            #expect(stamped.allSatisfy { $0.value != nil })
            // Each stamp is the relay's send time: arrival minus the path's constant delay, so
            // differences between packets match arrival differences within a stamp's resolution
            // (2^-18 s) and the virtual link's queueing (none here).
            let values: [UInt32] = stamped.compactMap { $0.value }
            if let first = stamped.first, let v0 = values.first {
                for (p, v) in zip(stamped, values) {
                    let sent = RTPExtensionCodec.absSendTimeSeconds((v &- v0) & 0xFF_FFFF)
                    #expect(abs(sent - (p.at - first.at)) < 0.001, "stamp \(sent) s vs arrival \(p.at - first.at) s")
                }
            }
        }
        for pc in [aiortc, chromium, publisher] { await pc.close() }
        await relay.stop()
    }
}
