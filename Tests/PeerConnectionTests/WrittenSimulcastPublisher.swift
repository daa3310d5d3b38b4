import Locks
@testable import PeerConnection
import Relay
import RTP
import RTPMedia
import SessionSupport

/// A simulcast publisher whose RTP the test writes: a sendonly H.264 peer publishing over WHIP
/// with `a=rid`/`a=simulcast` lines added to its offer (as a browser's `sendEncodings` make),
/// each layer sent with its own SSRC, sequence numbers and rid. Payloads are tagged: byte 0 the
/// NAL type (IDR or not), byte 1 the layer (1 for the first rid, 2 for the second, …), byte 2 a
/// running number; the rest pads the packet to the size asked for. With `codec: .vp8` each
/// payload starts with a VP8 payload descriptor (each layer numbering its pictures on its own,
/// frames in the L1T3 pattern 0 2 1 2) and a VP8 frame header, and the tag is its last two
/// bytes (`vp8Tag`).
final class WrittenSimulcastPublisher {
    let pc: PeerConnection
    let rids: [String]
    /// The relay's answer to the offer.
    let answer: String
    private let transport: MediaTransport
    private let payloadType: UInt8
    private var sequence: [UInt16]
    private var number: UInt8 = 0
    private var frame: UInt32 = 0
    /// What went out, per layer, by sequence number (for `sendAgain`).
    private var sent: [String: [UInt16: RTPPacket]] = [:]
    private var rtxPayloadType: UInt8?
    private var rtxSequence: UInt16 = 7
    private let isVP8: Bool
    /// VP8: each layer's PictureID and TL0PICIDX.
    private var pictureIDs: [UInt16]
    private var tl0s: [UInt8]
    /// Each layer's newest keyframe's sequence number.
    private(set) var keyframeSequence: [String: UInt16] = [:]

    static let ridExtensionID: UInt8 = 10
    static let repairedRIDExtensionID: UInt8 = 11

    init(_ sim: Simulation, relay: RelayServer, stream: String, rids: [String], codec: RtpCodecCapability = .h264) async throws {
        precondition(rids.count > 1, "simulcast takes two layers or more")
        self.rids = rids
        isVP8 = codec == .vp8
        pictureIDs = rids.indices.map { UInt16($0 * 1000) }
        tl0s = rids.indices.map { UInt8($0 * 50) }
        pc = try sim.peer { $0.mediaPipeline = false }
        let sending = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [codec])
        let lines = ["a=extmap:\(Self.ridExtensionID) urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
                     "a=extmap:\(Self.repairedRIDExtensionID) urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"]
            + rids.map { "a=rid:\($0) send" } + ["a=simulcast:send " + rids.joined(separator: ";")]
        answer = try await sim.exchange(relay, pc, endpoint: "whip", stream: stream, edit: { $0 + lines.map { $0 + "\r\n" }.joined() })
        guard let pt = sending.negotiatedCodecs.first?.payloadType, let transport = sending.sender.transport else {
            throw SimulationError("the publisher has no codec or transport after the exchange")
        }
        payloadType = pt
        rtxPayloadType = sending.negotiatedCodecs.first { $0.mimeType.lowercased() == "video/rtx" && $0.sdpFmtpLine == "apt=\(pt)" }?.payloadType
        self.transport = transport
        sequence = rids.indices.map { UInt16(truncatingIfNeeded: 100 + $0 * 20_000) }
    }

    func ssrc(_ rid: String) -> UInt32 { 0x1111_0000 &* UInt32((rids.firstIndex(of: rid) ?? 0) + 1) }

    /// One packet of layer `rid` (its last of the frame: marker set). VP8: `temporal` is the
    /// frame's temporal layer and layer sync bit, `first` whether the packet starts the frame.
    func send(_ rid: String, keyframe: Bool = false, timestamp: UInt32, size: Int = 3, marker: Bool = true,
              temporal: (layer: UInt8, sync: Bool) = (0, false), first: Bool = true) {
        guard let layer = rids.firstIndex(of: rid) else { return }
        number &+= 1
        var payload: [UInt8]
        if isVP8 {
            let d = VP8PayloadDescriptor(nonReference: temporal.layer == 2, startOfPartition: first, pictureID: pictureIDs[layer],
                                         tl0PictureIndex: tl0s[layer], temporalLayerIndex: temporal.layer, layerSync: temporal.sync)
            // A keyframe's header (640x360) or an interframe's.
            payload = d.serialize() + (first && keyframe ? [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0x80, 0x02, 0x68, 0x01] : [0x01, 0x00, 0x00])
            payload += [UInt8](repeating: 0xAB, count: max(0, size - payload.count - 2)) + [UInt8(layer + 1), number]
        } else {
            payload = [keyframe ? 0x65 : 0x41, UInt8(layer + 1), number]
            if size > payload.count { payload += [UInt8](repeating: 0xAB, count: size - payload.count) }
        }
        var packet = RTPPacket(marker: marker, payloadType: payloadType, sequenceNumber: sequence[layer], timestamp: timestamp,
                               ssrc: ssrc(rid), payload: payload)
        if keyframe { keyframeSequence[rid] = sequence[layer] }
        sequence[layer] &+= 1
        packet.setExtension(id: Self.ridExtensionID, data: Array(rid.utf8))
        sent[rid, default: [:]][packet.sequenceNumber] = packet
        transport.sendRaw(packet.serialize())
    }

    /// A packet of layer `rid` sent before, again on the layer's RTX stream (RFC 4588, named by
    /// repaired-rtp-stream-id), as a probe's payload padding sends it.
    func sendAgain(_ rid: String, sequenceNumber: UInt16) throws {
        guard let original = sent[rid]?[sequenceNumber], let rtxPayloadType else {
            throw SimulationError("no packet \(sequenceNumber) of \(rid), or no rtx negotiated")
        }
        let osn = [UInt8(sequenceNumber >> 8), UInt8(truncatingIfNeeded: sequenceNumber)]
        var packet = RTPPacket(marker: original.marker, payloadType: rtxPayloadType, sequenceNumber: rtxSequence,
                               timestamp: original.timestamp, ssrc: ssrc(rid) &+ 1, payload: osn + original.payload)
        rtxSequence &+= 1
        packet.setExtension(id: Self.repairedRIDExtensionID, data: Array(rid.utf8))
        transport.sendRaw(packet.serialize())
    }

    /// The sequence number layer `rid`'s next packet takes.
    func nextSequence(_ rid: String) -> UInt16 { sequence[rids.firstIndex(of: rid) ?? 0] }

    /// `count` frames 33 ms apart, every layer one packet each (the keyframe on layer
    /// `keyframe`'s first frame); moves the simulation on by each frame's interval.
    func frames(_ sim: Simulation, _ count: Int, keyframe: String? = nil) {
        for i in 0..<count {
            frame += 1
            for rid in rids { send(rid, keyframe: i == 0 && rid == keyframe, timestamp: frame * 3000) }
            sim.advance(by: .milliseconds(33))
        }
    }

    /// One frame 33 ms long with `packets[i]` packets of `size` bytes on layer i (a keyframe on
    /// the layers in `keyframes`), sent spread over the interval.
    func frame(_ sim: Simulation, packets: [Int], size: Int = 1200, keyframes: Set<String> = []) {
        frame += 1
        let total = packets.reduce(0, +)
        var step = 0
        for (layer, rid) in rids.enumerated() {
            for p in 0..<packets[layer] {
                send(rid, keyframe: p == 0 && keyframes.contains(rid), timestamp: frame * 3000, size: size,
                     marker: p == packets[layer] - 1)
                step += 1
                sim.advance(by: .microseconds(33_000 / max(1, total)))
            }
        }
        sim.advance(by: .microseconds(33_000 - Int64(step) * Int64(33_000 / max(1, total))))
    }

    /// VP8: one frame 33 ms long of every layer, `packets[i][tid]` packets of `size` bytes on
    /// layer i for a frame of temporal layer tid, in the L1T3 pattern 0 2 1 2 (frame n of each
    /// layer; a keyframe on the layers in `keyframes`, which starts the pattern over there).
    func vp8Frame(_ sim: Simulation, packets: [[Int]], size: Int = 1000, keyframes: Set<String> = []) {
        precondition(isVP8)
        frame += 1
        var step: Int64 = 0
        for (layer, rid) in rids.enumerated() {
            if keyframes.contains(rid) { patternStart[rid] = frame }
            let position = Int(frame &- (patternStart[rid] ?? 0)) % 4
            let tid: UInt8 = [0, 2, 1, 2][position]
            if tid == 0 { tl0s[layer] &+= 1 }
            let count = packets[layer][Int(tid)]
            for p in 0..<count {
                send(rid, keyframe: p == 0 && keyframes.contains(rid), timestamp: frame * 3000, size: size, marker: p == count - 1,
                     temporal: (tid, position == 1 || position == 2), first: p == 0)
                sim.advance(by: .microseconds(1_000))   // paced: a packet a millisecond
                step += 1
            }
            pictureIDs[layer] = (pictureIDs[layer] + 1) & 0x7FFF
        }
        sim.advance(by: .microseconds(max(0, 33_000 - step * 1_000)))
    }
    private var patternStart: [String: UInt32] = [:]

    /// The layer tag (1 for the first rid, …) of a VP8 packet from `vp8Frame`.
    static func vp8Tag(_ payload: [UInt8]) -> UInt8 { payload.count >= 2 ? payload[payload.count - 2] : 0 }

    /// Records the media SSRC of every PLI the relay sends this publisher (its layers' SSRCs are
    /// the test's, unknown to its sender: taken off the transport).
    func recordPLIs(_ sim: Simulation) -> Locked<[UInt32]> {
        let plis = Locked<[UInt32]>([])
        sim.loop.perform { [transport] in
            let next = transport.onRTCP
            transport.onRTCP = { packets in
                for case .pli(_, let media) in packets { plis.withLock { $0.append(media) } }
                next?(packets)
            }
        }
        return plis
    }

    func close() async { await pc.close() }
}
