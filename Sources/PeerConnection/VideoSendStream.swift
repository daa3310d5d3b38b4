import Codecs
import Dispatch
import Media
import RTP
import RTPMedia
import Locks
import Synchronization
import Transport

/// track → encoder → packetizer → SRTP, for one video sender. Frames arrive on the capture
/// thread and wait in a one-frame mailbox, so a slow encoder drops frames instead of queueing
/// latency; encoding runs on the stream's own queue; packets go out on the connection's loop,
/// which also keeps the history that answers NACKs.
final class VideoSendStream: VideoRenderer, @unchecked Sendable {
    // @unchecked: `encoder`…`nextAllowedNs` are used on `queue` only; `history`, `senderStats`
    // on the loop thread only; shared counters sit behind Mutexes.
    let sender: RtpSender
    let codec: VideoCodecType
    let payloadType: UInt8
    private weak var transport: MediaTransport?
    private let loop: EventLoop
    private let queue: CodecQueue
    /// Encoding on the caller (`CodecExecution.inline`): rate decisions use the loop's clock.
    private let inline: Bool
    private let mailbox = Locked<(frame: VideoFrame?, scheduled: Bool)>((nil, false))
    private let keyframeWanted = Atomic<Bool>(true)
    private let parameters: Locked<RtpSendParameters>
    private let counters = Locked(VideoSendCounters())

    // encode queue state
    private var encoder: (any VideoEncoder)?
    private var h264 = H264Packetizer()
    private var vp8 = VP8Packetizer(initialPictureID: UInt16.random(in: 0...0x7fff))
    private var firstCaptureNs: Int64?
    private let timestampBase = UInt32.random(in: 0...UInt32.max)
    private var nextAllowedNs: Int64 = .min
    private var encoderPreference: DegradationPreference?
    /// The rotation the last frame's orientation element said (nil: none sent yet).
    private var lastSentRotation: VideoRotation?
    /// What gives way when the network's estimate is short (degradationPreference).
    private var adaptation = BandwidthAdaptation()
    /// Skips frames the link cannot carry yet (encoder overshoot, a full pacer queue).
    private var dropper = FrameDropper()
    /// The connection's bandwidth estimate (0 until feedback arrives).
    private let network: NetworkTarget
    /// Simulcast: the encodings that send (indices into `parameters.encodings`, this stream's
    /// `sender.encodingIndex` among them); the estimate is split across them
    /// (`SimulcastAllocation`). Empty: one stream, which gets all of it.
    private let simulcastLayers: [Int]
    /// Which of those layers sent at their last split, shared by the sender's streams so each
    /// computes the same split (each on its own encode queue).
    private let layersOn: Locked<Set<Int>>

    init(sender: RtpSender, codec: VideoCodecType, payloadType: UInt8, transport: MediaTransport, loop: EventLoop,
         network: NetworkTarget, execution: CodecExecution, simulcastLayers: [Int] = [],
         layersOn: Locked<Set<Int>> = Locked([])) {
        self.simulcastLayers = simulcastLayers
        self.layersOn = layersOn
        queue = CodecQueue(label: "swiftrtc.video-encode", qos: .userInitiated, execution: execution)
        inline = execution == .inline
        self.sender = sender
        self.network = network
        self.codec = codec
        self.payloadType = payloadType
        self.transport = transport
        self.loop = loop
        self.parameters = Locked(sender.parameters)
    }

    var stats: VideoSendCounters { counters.withLock { $0 } }

    // MARK: frames in (capture thread)

    func render(_ frame: VideoFrame) {
        let schedule = mailbox.withLock { box -> Bool in
            if box.frame != nil { counters.withLock { $0.framesDroppedBusy += 1 } }
            box.frame = frame
            if box.scheduled { return false }
            box.scheduled = true
            return true
        }
        if schedule { queue.async { [self] in encodeWaiting() } }
    }

    func requestKeyframe() { keyframeWanted.store(true, ordering: .relaxed) }

    func update(_ p: RtpSendParameters) { parameters.withLock { $0 = p } }

    // MARK: encode queue

    private func encodeWaiting() {
        while let frame = mailbox.withLock({ box -> VideoFrame? in
            defer { box.frame = nil }
            if box.frame == nil { box.scheduled = false }
            return box.frame
        }) {
            encode(frame)
        }
    }

    private func encode(_ input: VideoFrame) {
        let p = parameters.withLock { $0 }
        let index = sender.encodingIndex
        let encoding = p.encodings.indices.contains(index) ? p.encodings[index] : RtpEncodingParameters()
        guard encoding.active else { return }
        let askedFps = encoding.maxFramerate.map { min($0, 30) } ?? 30
        // The network's estimate, within the sender's limits, decides size and rate.
        var networkBitrate = network.bitrate
        // Simulcast: only the largest layer that sends holds its encoder to its share by dropping
        // frames; the layers below it keep their frame rate (an encoder that overshoots a small
        // layer's target — libvpx on a detailed 320x180 picture, 3× — is paid for by the top
        // layer's share as the estimate follows, not by that layer's smoothness).
        var isTopLayer = true
        var adapted = BandwidthAdaptation.Output(scale: 1, fps: askedFps, limited: false)
        if !simulcastLayers.isEmpty {
            // A simulcast layer keeps its size and rate; the estimate decides which layers send.
            guard let share = layerShare(of: networkBitrate, encodings: p.encodings, width: input.width, height: input.height)
            else {
                counters.withLock { $0.framesDroppedRate += 1 }
                return
            }
            networkBitrate = share.bitrate
            isTopLayer = share.isTop
        } else if networkBitrate > 0 {
            let bps = min(max(networkBitrate, encoding.minBitrate ?? 0), encoding.maxBitrate ?? .max)
            if network.isSettled {
                adapted = adaptation.adapt(width: input.width, height: input.height, fps: askedFps, targetBitrate: bps,
                                           preference: p.degradationPreference, now: inline ? loop.now : .now)
            } else if p.degradationPreference != .maintainResolution {
                adapted = adaptation.start(width: input.width, height: input.height, fps: askedFps, targetBitrate: bps)
            }
        }
        // maxFramerate (and a lower rate the network asks for): let frames through on an even
        // grid of the capture clock.
        let rateLimit = adapted.fps < askedFps ? adapted.fps : encoding.maxFramerate
        if let maxFps = rateLimit, maxFps > 0 {
            let interval = Int64(1e9 / maxFps)
            if nextAllowedNs != .min && input.timestampNs + interval / 10 < nextAllowedNs {
                counters.withLock { $0.framesDroppedRate += 1 }
                return
            }
            // Stay on the grid unless the source stalled for longer than one interval.
            let onGrid = nextAllowedNs != .min && input.timestampNs - nextAllowedNs <= interval
            nextAllowedNs = (onGrid ? nextAllowedNs : input.timestampNs) + interval
        }
        var frame = input
        if frame.format != .i420 { frame.buffer = frame.buffer.converted(to: .i420) }
        let scaleBy = (encoding.scaleResolutionDownBy ?? 1) * adapted.scale
        if scaleBy > 1 {
            let w = max(2, Int(Double(frame.width) / scaleBy) & ~1), h = max(2, Int(Double(frame.height) / scaleBy) & ~1)
            frame.buffer = frame.buffer.scaled(width: w, height: h)
        }
        // The rotation travels in the video-orientation extension when negotiated (the frame is
        // sent as captured); otherwise it is turned into pixels here (after scaling: fewer of
        // them), so the receiver still sees the picture upright. 90/270 swap the encoded size,
        // which rebuilds the encoder below.
        let orientationID = sender.videoOrientationExtensionID
        if orientationID == nil, frame.rotation != .r0 {
            frame = frame.applyingRotation()   // into Media's shared pool for that size
        }
        let fps = min(askedFps, adapted.fps)
        let target = networkBitrate > 0
            ? min(max(networkBitrate, encoding.minBitrate ?? 30_000), encoding.maxBitrate ?? .max)
            : targetBitrate(width: frame.width, height: frame.height, fps: fps, encoding: encoding)
        if networkBitrate > 0,
           dropper.shouldDrop(now: inline ? loop.now : .now, targetBitrate: target, queueDelay: network.queueDelay,
                              bucket: network.isSettled && p.degradationPreference != .maintainFramerate && isTopLayer,
                              keyframeWanted: keyframeWanted.load(ordering: .relaxed) || encoder == nil) {
            counters.withLock { $0.framesDroppedCongestion += 1 }
            return
        }
        do {
            // Frame rate and size follow the estimate through BandwidthAdaptation, not through the
            // encoder's own frame skipping: only maintain-resolution lets libvpx drop frames to
            // hold its rate. OpenH264's skipping is never on: after a target change it skipped
            // 40% of the frames for seconds at a time (measured here at 2.5 Mbit/s, 720p).
            // A preference change rebuilds the encoder.
            if encoderPreference != p.degradationPreference {
                encoder = nil
                encoderPreference = p.degradationPreference
            }
            let temporalLayers = encoding.temporalLayers(for: codec)
            if encoder == nil || encoder?.settings.width != frame.width || encoder?.settings.height != frame.height
                || encoder?.settings.temporalLayers != temporalLayers {
                let settings = VideoEncoderSettings(width: frame.width, height: frame.height, framerate: fps, bitrate: target,
                                                    maxBitrate: encoding.maxBitrate, minBitrate: encoding.minBitrate,
                                                    temporalLayers: temporalLayers)
                if let encoder {
                    try encoder.configure(settings)
                } else {
                    let skip = p.degradationPreference == .maintainResolution
                    let factory = VideoEncoderFactory(h264Options: OpenH264Encoder.Options(frameSkip: false),
                                                      vp8Options: VP8Encoder.Options(frameDropping: skip))
                    encoder = try factory.makeEncoder(codec, settings: settings)
                }
                keyframeWanted.store(true, ordering: .relaxed)
            } else if let encoder, encoder.settings.bitrate != target || encoder.settings.framerate != fps {
                encoder.setRates(bitrate: target, framerate: fps)
            }
            guard let encoder else { return }
            let first = firstCaptureNs ?? frame.timestampNs
            firstCaptureNs = first
            let rtpTimestamp = timestampBase &+ UInt32(truncatingIfNeeded: (frame.timestampNs - first) * 9 / 100_000)
            let force = keyframeWanted.exchange(false, ordering: .relaxed)
            let started = ContinuousClock.now
            guard let encoded = try encoder.encode(frame, rtpTimestamp: rtpTimestamp, forceKeyframe: force) else {
                counters.withLock { $0.framesDroppedEncoder += 1 }
                return
            }
            let encodeTime = ContinuousClock.now - started
            dropper.encoded(bytes: encoded.data.count)
            sender.onEncodedVideo?(encoded)
            // As libwebrtc: on keyframes, on a change, and whenever the rotation is not 0 (receivers
            // that lost the keyframe's element still turn the picture).
            var lastPacketExtensions: [RTPHeaderExtension] = []
            if let orientationID {
                if encoded.isKeyframe || frame.rotation != lastSentRotation || frame.rotation != .r0 {
                    lastPacketExtensions = [RTPHeaderExtension(id: orientationID, data: frame.rotation.videoOrientationExtensionData)]
                }
                lastSentRotation = frame.rotation
            }
            let payloads: [RTPPayload]
            switch codec {
            case .h264: payloads = h264.packetize(encoded, maxPayloadSize: RTPPayloadLimits.defaultMaxPayloadSize)
            case .vp8: payloads = vp8.packetize(encoded, maxPayloadSize: RTPPayloadLimits.defaultMaxPayloadSize)
            }
            counters.withLock {
                $0.framesEncoded += 1
                if encoded.isKeyframe { $0.keyFramesEncoded += 1 }
                $0.frameWidth = frame.width
                $0.frameHeight = frame.height
                $0.totalEncodeTime += encodeTime
                $0.totalEncodedBytes += encoded.data.count
                $0.targetBitrate = target
                $0.bandwidthLimited = adapted.limited
                $0.resolutionChanges = adaptation.resolutionChanges
                $0.temporalLayers = encoder.settings.temporalLayers
            }
            sender.sendPayloads(payloads, payloadType: payloadType, timestamp: rtpTimestamp,
                                lastPacketExtensions: lastPacketExtensions, isKeyframe: encoded.isKeyframe,
                                captureTimeNs: frame.timestampNs)
        } catch {
            counters.withLock { $0.encodeErrors += 1 }
            encoder = nil   // re-created on the next frame
        }
    }

    /// This layer's part of `total` (nil: the layer is off; `total` 0, no estimate yet: 0, all
    /// layers on at their defaults). A layer coming back on starts with a keyframe.
    private func layerShare(of total: Int, encodings: [RtpEncodingParameters], width: Int, height: Int)
        -> (bitrate: Int, isTop: Bool)? {
        let me = sender.encodingIndex
        let wasOn = layersOn.withLock { $0 }
        var share = 0, isTop = true
        if total > 0 {
            let layers = SimulcastAllocation.layers(of: encodings, indices: simulcastLayers, width: width, height: height,
                                                    wasOn: wasOn.contains)
            let shares = SimulcastAllocation.split(total, layers.map(\.layer))
            let position = layers.firstIndex { $0.index == me }
            share = position.map { shares[$0] } ?? 0
            isTop = position.map { shares.indices.contains($0 + 1) ? shares[$0 + 1] == 0 : true } ?? true
        }
        let on = total == 0 || share > 0
        if on != wasOn.contains(me) {
            if on { keyframeWanted.store(true, ordering: .relaxed) }
            layersOn.withLock { if on { $0.insert(me) } else { $0.remove(me) } }
            counters.withLock {
                $0.layerSwitches += 1
                if !on { $0.targetBitrate = 0 }
            }
        }
        return on ? (share, isTop) : nil
    }

    /// libwebrtc-like defaults: about 0.05 bit per pixel per frame, within the sender's limits.
    private func targetBitrate(width: Int, height: Int, fps: Double, encoding: RtpEncodingParameters) -> Int {
        var bps = Int(Double(width * height) * fps * 0.05)
        bps = min(max(bps, 150_000), 2_500_000)
        if let m = encoding.maxBitrate { bps = min(bps, m) }
        if let m = encoding.minBitrate { bps = max(bps, m) }
        return bps
    }

    // MARK: loop thread

    /// A NACK from the receiver: the sender resends what its history still holds.
    func handleNack(_ sequenceNumbers: [UInt16], now: ContinuousClock.Instant) {
        let resent = sender.handleNack(sequenceNumbers, now: now)
        counters.withLock {
            $0.nackCount += 1
            $0.retransmittedPackets += resent
        }
    }

    /// A PLI or FIR about this stream: bursts (every receiver behind a relay, each NACK round
    /// under loss) collapse into one keyframe per interval (the sender's throttle).
    func handleKeyframeRequest(_ packet: RTCPPacket, now: ContinuousClock.Instant) {
        let wanted = sender.keyframeRequests.handle(packet, now: now)
        let requests = sender.keyframeRequests
        counters.withLock {
            $0.pliCount = requests.plisReceived
            $0.firCount = requests.firsReceived
            $0.keyframesRequested = requests.keyframesRequested
        }
        if wanted { requestKeyframe() }
    }
}

struct VideoSendCounters: Sendable {
    var framesEncoded = 0, keyFramesEncoded = 0, frameWidth = 0, frameHeight = 0
    var framesDroppedBusy = 0, framesDroppedRate = 0, framesDroppedEncoder = 0, framesDroppedCongestion = 0, encodeErrors = 0
    var totalEncodeTime: Duration = .zero, totalEncodedBytes = 0, targetBitrate = 0
    /// The network's estimate made the encoder lower the resolution or the frame rate.
    var bandwidthLimited = false, resolutionChanges = 0
    /// Simulcast: times this layer was switched off or on by the split of the estimate.
    var layerSwitches = 0
    /// What the encoder makes (W3C scalabilityMode L1T1…L1T3).
    var temporalLayers = 1
    var nackCount = 0, pliCount = 0, firCount = 0, keyframesRequested = 0, retransmittedPackets = 0
}
