import Media
import RTP
@testable import RTPMedia
import SeededRandom

/// A NAL unit: header byte (NRI 3) then non-zero filler, so no start code can appear inside.
func makeNAL(type: UInt8, size: Int, rng: inout SplitMix64, nri: UInt8 = 3) -> [UInt8] {
    var nal: [UInt8] = [nri << 5 | type]
    for _ in 1..<max(size, 1) { nal.append(UInt8.random(in: 1...255, using: &rng)) }
    return nal
}

func annexB(_ nals: [[UInt8]]) -> [UInt8] {
    nals.reduce(into: []) { $0 += [0, 0, 0, 1] + $1 }
}

/// Synthetic H.264 encoder output: keyframes are SPS + PPS + IDR, others one slice.
struct SyntheticH264 {
    var rng: SplitMix64
    let sps: [UInt8]
    let pps: [UInt8]

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
        var r = SplitMix64(seed: seed ^ 0xABCD)
        sps = makeNAL(type: 7, size: 12, rng: &r)
        pps = makeNAL(type: 8, size: 4, rng: &r)
    }

    mutating func frame(keyframe: Bool, size: Int? = nil) -> [UInt8] {
        if keyframe {
            return annexB([sps, pps, makeNAL(type: 5, size: size ?? Int.random(in: 3000...6000, using: &rng), rng: &rng)])
        }
        return annexB([makeNAL(type: 1, size: size ?? Int.random(in: 100...2500, using: &rng), rng: &rng, nri: 2)])
    }
}

/// A VP8 frame as libvpx lays one out: a 3-byte frame tag (+ start code and size for keyframes).
func makeVP8Frame(keyframe: Bool, size: Int, width: Int = 1280, height: Int = 720, rng: inout SplitMix64) -> [UInt8] {
    var f: [UInt8] = keyframe
        ? [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8)]
        : [0x11, 0x02, 0x00]
    while f.count < size { f.append(UInt8.random(in: 0...255, using: &rng)) }
    return f
}

/// Sender side of a simulated video stream: frames → packets (kept in an RTPHistory).
struct SimulatedVideoSender {
    var codec: VideoCodecType
    var h264 = H264Packetizer()
    var vp8 = VP8Packetizer(initialPictureID: 0x7FF0)
    var sequencer: RTPSequencer
    var history = RTPHistory<[UInt8]>(capacity: 4096)
    var source: SyntheticH264
    var rng: SplitMix64
    var timestamp: UInt32
    var sent: [(timestamp: UInt32, data: [UInt8], key: Bool)] = []

    init(codec: VideoCodecType = .h264, ssrc: UInt32 = 0x1234_5678, firstSequence: UInt16 = 65_500,
         firstTimestamp: UInt32 = 0xFFFF_0000, seed: UInt64 = 7) {
        self.codec = codec
        sequencer = RTPSequencer(ssrc: ssrc, payloadType: 96, initialSequenceNumber: firstSequence)
        source = SyntheticH264(seed: seed)
        rng = SplitMix64(seed: seed &+ 1)
        timestamp = firstTimestamp
    }

    /// Encodes, packetizes and records one frame; returns its packets.
    mutating func nextFrame(keyframe: Bool, size: Int? = nil, at now: ContinuousClock.Instant) -> [RTPPacket] {
        let data: [UInt8]
        let payloads: [RTPPayload]
        switch codec {
        case .h264:
            data = source.frame(keyframe: keyframe, size: size)
            payloads = h264.packetize(annexB: data, maxPayloadSize: 1152)
        case .vp8:
            data = makeVP8Frame(keyframe: keyframe, size: size ?? (keyframe ? 5000 : Int.random(in: 100...2500, using: &rng)), rng: &rng)
            payloads = vp8.packetize(frame: data, maxPayloadSize: 1152)
        }
        let packets = sequencer.packets(for: payloads, timestamp: timestamp)
        for p in packets { history.store(p.serialize(), sequenceNumber: p.sequenceNumber, sentAt: now) }
        sent.append((timestamp, data, keyframe))
        timestamp &+= 3000
        return packets
    }
}

/// A network that delays, loses and slightly reorders; items leave in arrival order.
struct SimulatedLink<Item> {
    var delay: Duration
    var jitter: Duration = .zero
    var loss: Double
    var rng: SplitMix64
    var inFlight: [(at: ContinuousClock.Instant, order: Int, item: Item)] = []
    var counter = 0

    init(delay: Duration, jitter: Duration = .zero, loss: Double, seed: UInt64) {
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
        self.rng = SplitMix64(seed: seed)
    }

    mutating func send(_ item: Item, now: ContinuousClock.Instant) {
        guard !rng.chance(loss) else { return }
        var at = now + delay
        if jitter > .zero {
            at += .microseconds(Int64.random(in: 0...(jitter.components.seconds * 1_000_000 + jitter.components.attoseconds / 1_000_000_000_000), using: &rng))
        }
        counter += 1
        inFlight.append((at, counter, item))
    }

    mutating func arrived(by now: ContinuousClock.Instant) -> [(ContinuousClock.Instant, Item)] {
        let due = inFlight.filter { $0.at <= now }.sorted { ($0.at, $0.order) < ($1.at, $1.order) }
        inFlight.removeAll { $0.at <= now }
        return due.map { ($0.at, $0.item) }
    }
}
