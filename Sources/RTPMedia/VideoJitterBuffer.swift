import Media
import RTP

/// Receive side of one video SSRC, sans-I/O: packets in (with their arrival time), whole frames
/// out in decode order, plus the feedback to send — generic NACKs for missing packets and
/// keyframe requests (PLI) when the stream cannot be decoded.
///
/// Frames leave only when every earlier frame left or was given up, so the decoder always has
/// its references. A gap that NACK does not fill within `recoveryDeadline` breaks the chain:
/// the buffer then drops frames until a keyframe and asks for one. A complete keyframe later in
/// the buffer ends any wait at once.
public struct VideoJitterBuffer: Sendable {
    public typealias Instant = ContinuousClock.Instant

    public struct Configuration: Sendable {
        public var codec: VideoCodecType
        public var clockRate: Int = 90_000
        /// Packets held at most; beyond it the oldest go (counted in `packetsDroppedOverflow`).
        public var maxPackets: Int = 2048
        /// Frames waiting for `pollFrame` at most; beyond it they are dropped and a keyframe asked for.
        public var maxReadyFrames: Int = 60
        public var maxNackRetries: Int = 10
        /// A missing packet is not asked for once it has been missing this long.
        public var nackMaxAge: Duration = .seconds(1)
        /// How long a gap must exist before the first NACK (0 = at once, as libwebrtc does);
        /// a few ms avoids asking for packets that are merely reordered.
        public var nackDelay: Duration = .zero
        /// Added to the RTT before asking again for the same packet.
        public var nackSlack: Duration = .milliseconds(20)
        /// A gap wider than this is not NACKed: the buffer gives up and asks for a keyframe.
        public var maxNackListSize: Int = 1000
        /// How long a gap may block the next frame before the buffer gives up on it (raised to
        /// 2·RTT + slack when that is longer). Also how long to wait for a first keyframe.
        public var recoveryDeadline: Duration = .milliseconds(600)
        /// Keyframe requests are at least max(this, RTT) apart.
        public var minKeyframeRequestInterval: Duration = .milliseconds(300)
        public var initialRTT: Duration = .milliseconds(100)
        /// A sequence jump beyond these (forward / backward) is taken as a stream restart once
        /// the next packet confirms it (RFC 3550 A.1 style).
        public var maxDropout: Int64 = 3000
        public var maxMisorder: Int64 = 1000

        public init(codec: VideoCodecType) {
            self.codec = codec
        }
    }

    public struct Statistics: Sendable, Equatable {
        /// RTP packets of this SSRC, duplicates included.
        public var packetsReceived = 0
        /// RFC 3550 cumulative lost (expected − received).
        public var packetsLost: Int64 = 0
        public var packetsDuplicated = 0
        /// Arrived after their frame was delivered or given up.
        public var packetsLate = 0
        /// Unparseable RTP, other SSRCs, unconfirmed sequence jumps.
        public var packetsDiscarded = 0
        /// RTP fine, payload not (the frame they belong to is dropped).
        public var malformedPackets = 0
        public var packetsDroppedOverflow = 0
        /// Packets that arrived after we NACKed them.
        public var retransmissionsReceived = 0
        /// NACK messages returned by `pollNack`.
        public var nacksSent = 0
        /// Sequence numbers in them (a number asked for twice counts twice).
        public var nackedSequences = 0
        public var plisSent = 0
        public var framesAssembled = 0
        public var framesDropped = 0
        public var malformedFrames = 0
        public var keyframesReceived = 0
        public var streamRestarts = 0
        /// RFC 3550 interarrival jitter, RTP units and seconds.
        public var jitter: UInt32 = 0
        public var jitterSeconds: Double = 0
    }

    public enum InsertResult: Sendable, Equatable {
        /// `malformed`: stored, but its payload is invalid (its frame will be dropped).
        /// `unparseable`: not RTP at all. `heldForConfirmation`: a sequence jump waiting for
        /// the next packet to confirm a stream restart.
        case accepted, duplicate, late, wrongSSRC, malformed, unparseable, heldForConfirmation
    }

    struct Packet: Sendable {
        var timestamp: UInt32
        var marker: Bool
        var payload: [UInt8]
        var info: VideoPacketInfo
        /// From the video-orientation extension, when the packet carries one.
        var rotation: VideoRotation?
    }

    public let configuration: Configuration
    /// Current round-trip estimate (from RTCP); paces NACK retries and keyframe requests.
    public var rtt: Duration {
        get { nack.rtt }
        set { nack.rtt = newValue }
    }

    /// How long first NACKs took to be answered (`NackGenerator.turnaround`).
    public var nackTurnaround: Duration? { nack.turnaround }
    /// Packets missing and tracked for NACKs (the RTT paces their retries).
    public var awaitsRetransmissions: Bool { nack.missingCount > 0 }
    /// The negotiated id of urn:3gpp:video-orientation (nil: not negotiated, frames keep `.r0`).
    /// Senders put it on a frame's last packet; a frame without it keeps the rotation of the
    /// frame before (3GPP TS 26.114 sends it only on keyframes and changes).
    public var videoOrientationExtensionID: UInt8?
    /// The rotation of the last frame delivered.
    public private(set) var currentRotation: VideoRotation = .r0

    public private(set) var ssrc: UInt32?
    /// RFC 3550 statistics of this stream, for our reception report.
    public private(set) var receiverStatistics: ReceiverStatistics?
    private var counters = Statistics()

    private var unwrapper = SequenceNumberUnwrapper()
    private var packets: [Int64: Packet] = [:]
    /// Highest sequence number accepted (the NACK generator sees every accepted packet).
    private var highest: Int64? { nack.highestReceived }
    private var firstSequence: Int64?
    /// Last sequence number of the newest frame delivered or dropped in order.
    private var boundary: Int64?
    /// Sequence numbers that ended a frame we already handled (start detection for H.264).
    private var frameEnds: Set<Int64> = []
    private var waitingForKeyframe = true
    private var waitingSince: Instant?
    private var stallSince: Instant?
    private var keyframeNeeded = false
    private var keyframeNeededSince: Instant?
    private var lastKeyframeRequest: Instant?
    /// The newest keyframe whose packets are arriving: its RTP timestamp and when its last
    /// packet came. While they keep coming, a repeated request would only start another one.
    private var keyframeInFlight: (timestamp: UInt32, lastPacket: Instant)?
    private var nack: NackGenerator
    private var ready: [EncodedFrame] = []
    private var probation: (packet: RTPPacket, arrival: Instant)?
    private var h264 = H264Depacketizer()
    private var lastNow: Instant?

    public init(configuration: Configuration) {
        self.configuration = configuration
        var n = NackGenerator.Configuration()
        n.maxRetries = configuration.maxNackRetries
        n.maxAge = configuration.nackMaxAge
        n.delay = configuration.nackDelay
        n.slack = configuration.nackSlack
        n.maxGap = configuration.maxNackListSize
        // Only a memory bound here: far above what a stream that can still recover has missing.
        n.maxListSize = 4 * max(configuration.maxNackListSize, configuration.maxPackets)
        self.nack = NackGenerator(configuration: n, rtt: configuration.initialRTT)
    }

    public init(codec: VideoCodecType) {
        self.init(configuration: Configuration(codec: codec))
    }

    public var statistics: Statistics {
        var s = counters
        s.nacksSent = nack.statistics.nacksSent
        s.nackedSequences = nack.statistics.nackedSequences
        s.retransmissionsReceived = nack.statistics.retransmissionsReceived
        s.packetsLost = receiverStatistics?.cumulativeLost ?? 0
        s.jitter = receiverStatistics?.jitter ?? 0
        s.jitterSeconds = receiverStatistics?.jitterSeconds ?? 0
        return s
    }

    /// Packets currently held.
    public var bufferedPackets: Int { packets.count }
    /// Whether output is paused until a keyframe.
    public var isWaitingForKeyframe: Bool { waitingForKeyframe }

    private var recoveryDeadline: Duration { max(configuration.recoveryDeadline, rtt * 2 + configuration.nackSlack) }
    private var keyframeRequestInterval: Duration { max(configuration.minKeyframeRequestInterval, rtt) }

    // MARK: Input

    /// Parses and inserts raw RTP bytes; unparseable ones are counted, never thrown.
    @discardableResult
    public mutating func insert(_ bytes: [UInt8], arrival: Instant) -> InsertResult {
        do {
            return insert(try RTPPacket(parsing: bytes), arrival: arrival)
        } catch {
            counters.packetsDiscarded += 1
            return .unparseable
        }
    }

    @discardableResult
    public mutating func insert(_ packet: RTPPacket, arrival: Instant) -> InsertResult {
        lastNow = max(lastNow ?? arrival, arrival)
        if let s = ssrc, s != packet.ssrc {
            counters.packetsDiscarded += 1
            return .wrongSSRC
        }
        if ssrc == nil {
            ssrc = packet.ssrc
            receiverStatistics = ReceiverStatistics(ssrc: packet.ssrc, clockRate: configuration.clockRate)
        }
        counters.packetsReceived += 1

        // A jump far outside reordering/loss: either garbage or a restarted sender. Believe it
        // when the next packet follows on.
        if let h = highest {
            let n = unwrapper.peek(packet.sequenceNumber)
            if n - h > configuration.maxDropout || (h - n > configuration.maxMisorder && !nack.isMissing(extended: n)) {
                if let held = probation, held.packet.sequenceNumber &+ 1 == packet.sequenceNumber {
                    restart()
                    receiverStatistics?.record(held.packet, arrival: held.arrival)
                    _ = accept(held.packet, arrival: held.arrival)
                    receiverStatistics?.record(packet, arrival: arrival)
                    return accept(packet, arrival: arrival)
                }
                probation = (packet, arrival)
                counters.packetsDiscarded += 1
                return .heldForConfirmation
            }
        }
        probation = nil
        let requested = nack.wasRequested(extended: unwrapper.peek(packet.sequenceNumber))
        receiverStatistics?.record(packet, arrival: arrival, isRetransmission: requested)
        return accept(packet, arrival: arrival)
    }

    private mutating func accept(_ packet: RTPPacket, arrival: Instant) -> InsertResult {
        let n = unwrapper.unwrap(packet.sequenceNumber)
        if let b = boundary, n <= b {
            nack.received(extended: n, at: arrival)
            counters.packetsLate += 1
            return .late
        }
        if packets[n] != nil {
            counters.packetsDuplicated += 1
            return .duplicate
        }
        if firstSequence == nil { waitingSince = arrival }
        if boundary == nil { firstSequence = min(firstSequence ?? n, n) }

        // Tracks gaps above the highest, clears the ones this packet fills.
        let gapTooWide = nack.received(extended: n, at: arrival) == .keyframeNeeded

        let info = VideoPacketInfo(codec: configuration.codec, payload: packet.payload)
        if info.malformed { counters.malformedPackets += 1 }
        if info.startsKeyframe || keyframeInFlight?.timestamp == packet.timestamp {
            keyframeInFlight = (packet.timestamp, arrival)
        }
        let rotation = videoOrientationExtensionID.flatMap { packet.extensionData(id: $0) }
            .flatMap { VideoRotation(videoOrientationExtensionData: $0) }
        packets[n] = Packet(timestamp: packet.timestamp, marker: packet.marker, payload: packet.payload, info: info,
                            rotation: rotation)

        if gapTooWide {
            giveUp(now: arrival)
        }
        enforceCapacity(now: arrival)
        drainHead(now: arrival)
        examine(n, now: arrival)
        examine(n + 1, now: arrival)
        updateStall(now: arrival)
        return info.malformed ? .malformed : .accepted
    }

    /// A new stream on the same SSRC: forget the old one's packets and sequence space.
    private mutating func restart() {
        counters.streamRestarts += 1
        counters.framesDropped += distinctTimestamps(packets.values.map(\.timestamp))
        unwrapper = SequenceNumberUnwrapper()
        packets.removeAll()
        nack.reset()
        frameEnds.removeAll()
        firstSequence = nil
        boundary = nil
        waitingForKeyframe = true
        waitingSince = nil
        stallSince = nil
        probation = nil
    }

    // MARK: Output

    /// The next decodable frame, in decode order.
    public mutating func pollFrame() -> EncodedFrame? {
        ready.isEmpty ? nil : ready.removeFirst()
    }

    /// Sequence numbers to NACK now (nil when none): new gaps, and earlier requests whose
    /// answer is overdue (RTT + slack), each at most `maxNackRetries` times and while younger
    /// than `nackMaxAge`.
    public mutating func pollNack(now: Instant) -> [UInt16]? {
        handleTimeout(now: now)
        if let b = boundary { nack.forget(below: b + 1) }
        let due = nack.poll(at: now)
        return due.isEmpty ? nil : due
    }

    /// Whether to send a PLI now (rate-limited; repeats while the need lasts).
    public mutating func pollKeyframeRequest(now: Instant) -> Bool {
        handleTimeout(now: now)
        guard keyframeNeeded, let due = nextKeyframeRequest, now >= due else { return false }
        lastKeyframeRequest = now
        counters.plisSent += 1
        return true
    }

    /// When a keyframe request is due: at once, then every `keyframeRequestInterval` — counted
    /// from the last packet of a keyframe still arriving, if one is (a big keyframe through a
    /// narrow link takes longer than the interval; asking again made the sender start over).
    private var nextKeyframeRequest: Instant? {
        guard let last = lastKeyframeRequest else { return keyframeNeededSince }
        var due = last + keyframeRequestInterval
        if let k = keyframeInFlight, k.lastPacket > last { due = max(due, k.lastPacket + keyframeRequestInterval) }
        return due
    }

    /// The decoder could not decode what it was given: drop until a keyframe and ask for one.
    public mutating func decoderFailed() {
        if let key = ready.firstIndex(where: \.isKeyframe) {
            counters.framesDropped += key
            ready.removeFirst(key)
            return
        }
        counters.framesDropped += ready.count
        ready.removeAll()
        giveUp(now: lastNow)
    }

    /// The earliest time `handleTimeout`/`pollNack`/`pollKeyframeRequest` has something to do.
    public func nextDeadline() -> Instant? {
        var best: Instant?
        func consider(_ t: Instant?) {
            guard let t else { return }
            if best.map({ t < $0 }) ?? true { best = t }
        }
        if !waitingForKeyframe, let since = stallSince { consider(since + recoveryDeadline) }
        if waitingForKeyframe, !keyframeNeeded, !packets.isEmpty, let since = waitingSince {
            consider(since + recoveryDeadline)
        }
        if keyframeNeeded {
            consider(nextKeyframeRequest)
        }
        consider(nack.nextDeadline())
        return best
    }

    /// Applies the deadlines: gives up on a gap that blocked the next frame too long, asks for
    /// a keyframe when none came in time.
    public mutating func handleTimeout(now: Instant) {
        lastNow = max(lastNow ?? now, now)
        if !waitingForKeyframe, let since = stallSince, now >= since + recoveryDeadline {
            giveUp(now: now)
        }
        if waitingForKeyframe, !keyframeNeeded, !packets.isEmpty, let since = waitingSince,
           now >= since + recoveryDeadline {
            requestKeyframe(now: now)
        }
    }

    // MARK: RTCP

    /// The report block about this stream for our RR/SR.
    public mutating func receptionReport(now: Instant) -> ReceptionReport? {
        receiverStatistics?.receptionReport(now: now)
    }

    public mutating func recordSenderReport(_ sr: SenderReport, arrival: Instant) {
        receiverStatistics?.recordSenderReport(sr, arrival: arrival)
    }

    // MARK: Frame assembly

    /// Whether packet `s` begins a frame, judged from itself and what precedes it.
    private func isCertainStart(_ s: Int64) -> Bool {
        guard let p = packets[s], p.info.startsFrame else { return false }
        if configuration.codec == .vp8 { return p.info.certainStart }
        if p.info.certainStart {
            // An SPS opens an access unit unless an earlier packet of it (an AUD, SEI) is here.
            guard let prev = packets[s - 1], !prev.info.isPadding, !prev.marker, prev.timestamp == p.timestamp else {
                return true
            }
            return false
        }
        // H.264: a frame starts after the end of the previous one.
        if s - 1 == boundary || frameEnds.contains(s - 1) { return true }
        if let prev = packets[s - 1] {
            return prev.info.isPadding || prev.marker || prev.timestamp != p.timestamp
        }
        return boundary == nil && s == firstSequence
    }

    /// The last packet of the frame that packet `n` belongs to, when all of it is here.
    private func frameEnd(from n: Int64, timestamp: UInt32) -> Int64? {
        var e = n
        while let cur = packets[e], !cur.marker {
            guard let next = packets[e + 1] else { return nil }
            // Contiguous but a new frame begins: this one ended without a marker. (A VP8 frame
            // start is unambiguous; an H.264 SPS may follow an AUD of the same frame.)
            if next.info.isPadding || next.timestamp != timestamp
                || (configuration.codec == .vp8 && next.info.certainStart) { return e }
            e += 1
        }
        return packets[e] == nil ? nil : e
    }

    /// The complete frame containing packet `n`, if there is one.
    private func completeFrame(containing n: Int64) -> (start: Int64, end: Int64)? {
        guard let p = packets[n], !p.info.isPadding else { return nil }
        var s = n
        while !isCertainStart(s) {
            guard let prev = packets[s - 1], !prev.info.isPadding, !prev.marker, prev.timestamp == p.timestamp else {
                return nil
            }
            s -= 1
        }
        guard let e = frameEnd(from: n, timestamp: p.timestamp) else { return nil }
        return (s, e)
    }

    private mutating func assemble(_ s: Int64, _ e: Int64) -> Result<EncodedFrame, PayloadError> {
        var payloads: [[UInt8]] = []
        payloads.reserveCapacity(Int(e - s + 1))
        var timestamp: UInt32 = 0
        var rotation = currentRotation
        for q in s...e {
            guard let p = packets[q] else { continue }
            timestamp = p.timestamp
            payloads.append(p.payload)
            if let r = p.rotation { rotation = r }   // the last packet's wins (that is where it is sent)
        }
        do throws(PayloadError) {
            let frame: DepacketizedFrame
            switch configuration.codec {
            case .h264: frame = try h264.depacketize(payloads)
            case .vp8: frame = try VP8Depacketizer.depacketize(payloads)
            }
            return .success(EncodedFrame(codec: configuration.codec, data: frame.data, isKeyframe: frame.isKeyframe,
                                         rtpTimestamp: timestamp, width: frame.width, height: frame.height,
                                         rotation: rotation))
        } catch {
            return .failure(error)
        }
    }

    /// Delivers complete frames at the head of the chain.
    private mutating func drainHead(now: Instant) {
        while !waitingForKeyframe, let b = boundary, let head = packets[b + 1] {
            if head.info.isPadding {
                packets[b + 1] = nil
                boundary = b + 1
                frameEnds.insert(b + 1)
                continue
            }
            guard head.info.startsFrame else {
                // The packet after a finished frame must start one; this stream is broken here.
                giveUp(now: now)
                return
            }
            guard let e = frameEnd(from: b + 1, timestamp: head.timestamp) else { return }
            switch assemble(b + 1, e) {
            case .success(let frame):
                release(b + 1, e)
                deliver(frame, now: now)
            case .failure:
                release(b + 1, e)
                counters.malformedFrames += 1
                counters.framesDropped += 1
                giveUp(now: now)
                return
            }
        }
    }

    /// Looks at the complete frame containing `n` when it is not at the head: a keyframe
    /// there ends any wait; other frames are dropped while waiting for a keyframe.
    private mutating func examine(_ n: Int64, now: Instant) {
        guard packets[n] != nil, let (s, e) = completeFrame(containing: n) else { return }
        if !waitingForKeyframe, let b = boundary, s <= b + 1 { return }  // drainHead's job
        let hint = (s...e).contains { packets[$0]?.info.keyHint ?? false }
        guard hint else {
            // A delta frame waits for its turn (it is kept: a keyframe before it may still
            // complete). When nothing before it can become a keyframe, ask for one now.
            if waitingForKeyframe, nothingCanPrecede(s) { requestKeyframe(now: now) }
            return
        }
        switch assemble(s, e) {
        case .success(let frame) where frame.isKeyframe:
            jump(to: s)
            release(s, e)
            deliver(frame, now: now)
            drainHead(now: now)
        case .success:
            if waitingForKeyframe, nothingCanPrecede(s) { requestKeyframe(now: now) }
        case .failure:
            release(s, e)
            counters.malformedFrames += 1
            counters.framesDropped += 1
            if waitingForKeyframe { requestKeyframe(now: now) } else { giveUp(now: now) }
        }
    }

    /// Whether the packets held before `s` are one unbroken run with no keyframe material, so
    /// no keyframe can still complete ahead of the frame at `s`.
    private func nothingCanPrecede(_ s: Int64) -> Bool {
        var lowest = s
        var count: Int64 = 0
        for (key, p) in packets where key < s {
            if p.info.keyHint { return false }
            lowest = min(lowest, key)
            count += 1
        }
        return count == s - lowest
    }

    /// Skips everything before `s` (a keyframe's first packet); output resumes there.
    private mutating func jump(to s: Int64) {
        dropPackets(below: s)
        nack.forget(below: s)
        boundary = s - 1
        waitingForKeyframe = false
        waitingSince = nil
        stallSince = nil
    }

    /// Removes a handled frame's packets and marks its end.
    private mutating func release(_ s: Int64, _ e: Int64) {
        for q in s...e { packets[q] = nil }
        // While waiting for a keyframe the boundary stays put: a late packet below a dropped
        // frame may still complete the keyframe we wait for.
        if !waitingForKeyframe { boundary = max(boundary ?? e, e) }
        frameEnds.insert(e)
        if frameEnds.count > 256, let h = highest {
            frameEnds = frameEnds.filter { $0 > h - 8192 }
        }
    }

    private mutating func deliver(_ frame: EncodedFrame, now: Instant) {
        stallSince = nil
        currentRotation = frame.rotation
        counters.framesAssembled += 1
        if frame.isKeyframe {
            counters.keyframesReceived += 1
            keyframeNeeded = false
            keyframeNeededSince = nil
            keyframeInFlight = nil
        }
        if ready.count >= configuration.maxReadyFrames {
            // Nobody is draining us; what is queued is stale and a delta frame cannot follow a gap.
            counters.framesDropped += ready.count
            ready.removeAll()
            if !frame.isKeyframe {
                counters.framesDropped += 1
                giveUp(now: now)
                return
            }
        }
        ready.append(frame)
    }

    private mutating func updateStall(now: Instant) {
        guard !waitingForKeyframe, let b = boundary, let h = highest, h > b, packets.count < Int(h - b) else {
            stallSince = nil
            return
        }
        if stallSince == nil { stallSince = now }
    }

    private mutating func requestKeyframe(now: Instant?) {
        if !keyframeNeeded {
            keyframeNeeded = true
            keyframeNeededSince = now ?? lastNow
        }
    }

    /// The chain is broken: wait for a keyframe (one already here is used at once) and ask for one.
    private mutating func giveUp(now: Instant?) {
        requestKeyframe(now: now)
        guard !waitingForKeyframe else { return }
        waitingForKeyframe = true
        waitingSince = now ?? lastNow
        stallSince = nil
        guard let now = now ?? lastNow else { return }
        for key in packets.keys.sorted() {
            guard let p = packets[key], p.info.keyHint, let (s, e) = completeFrame(containing: key) else { continue }
            if case .success(let frame) = assemble(s, e), frame.isKeyframe {
                jump(to: s)
                release(s, e)
                deliver(frame, now: now)
                drainHead(now: now)
                return
            }
        }
    }

    private mutating func enforceCapacity(now: Instant) {
        guard packets.count > configuration.maxPackets else { return }
        let keys = packets.keys.sorted()
        let count = min(keys.count, packets.count - configuration.maxPackets + max(configuration.maxPackets / 8, 1))
        let cut = keys[count - 1]
        counters.packetsDroppedOverflow += count
        dropPackets(below: cut + 1)
        nack.forget(below: cut + 1)
        if !waitingForKeyframe, let b = boundary, cut > b {
            giveUp(now: now)
        }
    }

    private mutating func dropPackets(below s: Int64) {
        var stamps: [UInt32] = []
        for (key, p) in packets where key < s {
            packets[key] = nil
            if !p.info.isPadding { stamps.append(p.timestamp) }
        }
        counters.framesDropped += distinctTimestamps(stamps)
    }

    private func distinctTimestamps(_ stamps: [UInt32]) -> Int {
        Set(stamps).count
    }
}
