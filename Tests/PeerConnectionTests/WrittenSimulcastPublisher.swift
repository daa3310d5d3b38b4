import Locks
@testable import PeerConnection
import Relay
import RTP
import SessionSupport

/// A simulcast publisher whose RTP the test writes: a sendonly H.264 peer publishing over WHIP
/// with `a=rid`/`a=simulcast` lines added to its offer (as a browser's `sendEncodings` make),
/// each layer sent with its own SSRC, sequence numbers and rid. Payloads are tagged: byte 0 the
/// NAL type (IDR or not), byte 1 the layer (1 for the first rid, 2 for the second, …), byte 2 a
/// running number; the rest pads the packet to the size asked for.
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
    /// Each layer's newest keyframe's sequence number.
    private(set) var keyframeSequence: [String: UInt16] = [:]

    static let ridExtensionID: UInt8 = 10
    static let repairedRIDExtensionID: UInt8 = 11

    init(_ sim: Simulation, relay: RelayServer, stream: String, rids: [String]) async throws {
        precondition(rids.count > 1, "simulcast takes two layers or more")
        self.rids = rids
        pc = try sim.peer { $0.mediaPipeline = false }
        let sending = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
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

    /// One packet of layer `rid` (its last of the frame: marker set).
    func send(_ rid: String, keyframe: Bool = false, timestamp: UInt32, size: Int = 3, marker: Bool = true) {
        guard let layer = rids.firstIndex(of: rid) else { return }
        number &+= 1
        var payload: [UInt8] = [keyframe ? 0x65 : 0x41, UInt8(layer + 1), number]
        if size > payload.count { payload += [UInt8](repeating: 0xAB, count: size - payload.count) }
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
