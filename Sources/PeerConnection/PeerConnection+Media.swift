import BandwidthEstimation
import Codecs
import Media
import RTP
import RTPMedia
import Locks
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// The media streams of one connection, keyed by mid. Loop thread only.
struct MediaStreams {
    var videoSend: [String: VideoSendStream] = [:]
    /// Simulcast: the other layers' streams of the m-line (`videoSend` has the largest).
    var videoLayers: [String: [VideoSendStream]] = [:]
    var audioSend: [String: AudioSendStream] = [:]
    var videoReceive: [String: VideoReceiveStream] = [:]
    var audioReceive: [String: AudioReceiveStream] = [:]
    var reportTimer: Int?
    var reportSchedule: RTCPScheduler?
    var ntp = NTPClock.now()

    /// Every video RTP stream we send: each m-line's, and the other simulcast layers.
    var allVideoSend: [VideoSendStream] { Array(videoSend.values) + videoLayers.values.joined() }
}

extension PeerConnection {
    /// W3C `addTrack`: a sendrecv transceiver carrying `track`.
    @discardableResult
    public func addTrack(_ track: VideoTrack, streamIds: [String] = [], codecs: [RtpCodecCapability]? = nil) async throws -> RtpSender {
        try await addTrackTransceiver(.video, streamIds: streamIds, codecs: codecs) { $0.replaceTrack(track) }
    }

    @discardableResult
    public func addTrack(_ track: AudioTrack, streamIds: [String] = []) async throws -> RtpSender {
        try await addTrackTransceiver(.audio, streamIds: streamIds, codecs: nil) { $0.replaceTrack(track) }
    }

    /// A sendrecv transceiver for addTrack, marked so a remote offer can match it (JSEP §5.10).
    private func addTrackTransceiver(_ kind: MediaKind, streamIds: [String], codecs: [RtpCodecCapability]?,
                                     attach: @escaping @Sendable (RtpSender) -> Void) async throws -> RtpSender {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError(.closed, "addTrack: the connection is closed") }
            let t = makeTransceiver(kind, TransceiverInit(direction: .sendrecv, streamIds: streamIds), codecs: codecs)
            t.createdByAddTrack = true
            attach(t.sender)
            return t.sender
        }
    }

    /// Creates the encode and decode streams the negotiation calls for (loop thread).
    func startMediaStreams() {
        loop.preconditionInLoop()
        guard configuration.mediaPipeline, let transport else { return }
        for t in transceiverList {
            guard let mid = t.mid, let direction = t.currentDirection, let codec = t.negotiatedCodecs.first else { continue }
            let name = codec.mimeType.split(separator: "/").last.map { $0.uppercased() } ?? ""
            switch t.kind {
            case .video:
                guard let type = VideoCodecType(mimeType: codec.mimeType) else { continue }
                if direction.sends, media.videoSend[mid] == nil {
                    // One stream per layer that sends (simulcast), each its own scaler and encoder.
                    let layers = t.sender.sendingLayers
                    let indices = layers.count > 1 ? layers.map(\.encodingIndex) : []
                    let on = Locked(Set(indices))
                    let streams = layers.map { layer in
                        VideoSendStream(sender: layer, codec: type, payloadType: codec.payloadType, transport: transport, loop: loop,
                                        network: transport.congestion.network, execution: configuration.codecExecution,
                                        simulcastLayers: indices, layersOn: on)
                    }
                    media.videoSend[mid] = streams[0]
                    if streams.count > 1 { media.videoLayers[mid] = Array(streams.dropFirst()) }
                    attachVideo(streams, to: t.sender)
                }
                let orientationID = t.negotiatedHeaderExtensions.id(for: RTPExtensionURI.videoOrientation)
                if direction.receives, media.videoReceive[mid] == nil, let track = t.receiver.videoTrack {
                    media.videoReceive[mid] = VideoReceiveStream(codec: type, track: track, feedbackSSRC: t.sender.ssrc,
                                                                 videoOrientationID: orientationID, transport: transport, loop: loop,
                                                                 execution: configuration.codecExecution)
                } else {
                    media.videoReceive[mid]?.setVideoOrientationID(orientationID)
                }
            case .audio:
                guard name == "OPUS" else { continue }
                if direction.sends, media.audioSend[mid] == nil {
                    let processing = t.sender.audioProcessingOverride ?? configuration.audioProcessing
                    let stream = AudioSendStream(sender: t.sender, payloadType: codec.payloadType, processing: processing,
                                                 execution: configuration.codecExecution)
                    t.sender.onAudioProcessingChanged = { stream.setProcessing($0) }
                    media.audioSend[mid] = stream
                    attachAudio(stream, to: t.sender)
                }
                if direction.receives, media.audioReceive[mid] == nil, let track = t.receiver.audioTrack {
                    media.audioReceive[mid] = AudioReceiveStream(track: track, loop: loop, execution: configuration.codecExecution)
                }
            }
        }
        if media.reportTimer == nil { scheduleReports() }
        updateCongestionBounds()
    }

    /// The estimator's bounds: the video senders' min/max bitrates (2.5 Mbit/s each when
    /// unset, libwebrtc's default ceiling) and what their Opus encoders take (loop thread).
    func updateCongestionBounds() {
        guard let transport else { return }
        var low = 0, high = 0
        for s in media.videoSend.values {
            let encodings = s.sender.parameters.encodings
            let layers = s.sender.sendingLayers.map(\.encodingIndex).filter(encodings.indices.contains)
            // A simulcast needs its lowest layer's minimum, and at most every layer's maximum.
            if layers.count > 1 {
                let size = s.sender.videoTrack?.lastFrameSize ?? VideoSize(width: 1280, height: 720)
                let rates = SimulcastAllocation.layers(of: encodings, indices: layers, width: size.width, height: size.height) { _ in true }
                low += rates.first?.layer.rates.min ?? 30_000
                high += rates.reduce(0) { $0 + $1.layer.rates.max }
                continue
            }
            let e = encodings[layers.first ?? 0]
            low += e.minBitrate ?? 30_000
            high += e.active ? (e.maxBitrate ?? 2_500_000) : 0
        }
        transport.congestion.setBounds(minBitrate: high > 0 ? low : nil, maxBitrate: high > 0 ? max(high, low) : nil,
                                       audioReserve: media.audioSend.count * 40_000, videoStreams: media.videoSend.count)
        if transport.congestion.makePadding == nil, let video = media.videoSend.values.first {
            transport.congestion.makePadding = { [sender = video.sender] request in sender.paddingPackets(request) }
        }
    }

    private func attachVideo(_ streams: [VideoSendStream], to sender: RtpSender) {
        let current = LockedBox<VideoTrack?>(nil)
        let attach: @Sendable () -> Void = {
            let track = sender.videoTrack
            current.update { old in
                if old !== track {
                    for stream in streams {
                        old?.removeRenderer(stream)
                        track?.addRenderer(stream)
                        stream.requestKeyframe()
                    }
                }
                old = track
            }
        }
        sender.onTrackChanged = attach
        sender.onParametersChanged = { [weak self] p in
            for stream in streams { stream.update(p) }
            self?.loop.execute { [weak self] in self?.updateCongestionBounds() }
        }
        for stream in streams { stream.update(sender.parameters) }
        attach()
    }

    private func attachAudio(_ stream: AudioSendStream, to sender: RtpSender) {
        let current = LockedBox<AudioTrack?>(nil)
        let attach: @Sendable () -> Void = {
            let track = sender.audioTrack
            current.update { old in
                if old !== track {
                    old?.removeSink(stream)
                    track?.addSink(stream)
                }
                old = track
            }
        }
        sender.onTrackChanged = attach
        attach()
    }

    func stopMediaStreams() {
        for (mid, s) in media.videoSend {
            // The layers' streams render the track of the m-line's sender.
            for stream in [s] + (media.videoLayers[mid] ?? []) { s.sender.videoTrack?.removeRenderer(stream) }
        }
        for (_, s) in media.audioSend { s.sender.audioTrack?.removeSink(s) }
        for (_, s) in media.videoReceive { s.close() }
        for (_, s) in media.audioReceive { s.close() }
        if let id = media.reportTimer { loop.cancelTimer(id) }
        media = MediaStreams()
    }

    /// RTCP about our streams and theirs (loop thread).
    func routeToStreams(_ packets: [RTCPPacket]) {
        loop.preconditionInLoop()
        let now = loop.now
        for packet in packets {
            switch packet {
            case .nack(let n):
                sendStream(ssrc: n.mediaSSRC)?.handleNack(n.lostSequenceNumbers, now: now)
            case .pli(_, let media):
                sendStream(ssrc: media)?.handleKeyframeRequest(packet, now: now)
            case .fir(let f):
                for e in f.entries { sendStream(ssrc: e.ssrc)?.handleKeyframeRequest(packet, now: now) }
            case .senderReport(let sr):
                media.videoReceive.values.first { $0.remoteSSRC == sr.ssrc }?.receiveSenderReport(sr, now: now)
                media.audioReceive.values.first { $0.remoteSSRC == sr.ssrc }?.receiveSenderReport(sr, now: now)
                handleReports(sr.reports, now: now)
            case .receiverReport(let rr):
                handleReports(rr.reports, now: now)
            case .transportCC(let feedback):
                transport?.congestion.handleTransportFeedback(feedback, now: Moment(now))
            case .remb(let remb):
                transport?.congestion.handleREMB(remb, now: Moment(now))
            default:
                break
            }
        }
    }

    private func handleReports(_ reports: [ReceptionReport], now: ContinuousClock.Instant) {
        for report in reports {
            if let audio = media.audioSend.values.first(where: { $0.sender.ssrc == report.ssrc }) {
                audio.sender.statistics.handle(report, arrival: now)
                audio.setReportedLoss(fraction: report.fractionLost)
                continue
            }
            guard let stream = sendStream(ssrc: report.ssrc) else { continue }
            let rtt = stream.sender.statistics.handle(report, arrival: now)
            if let rtt {
                stream.sender.nack.rtt = rtt
                for r in media.videoReceive.values { r.setRTT(rtt) }
            }
            transport?.congestion.handleReceiverReport(fractionLost: report.fractionLost, rtt: rtt, now: Moment(now))
        }
    }

    private func sendStream(ssrc: UInt32) -> VideoSendStream? {
        media.videoSend.values.first { $0.sender.ssrc == ssrc } ?? media.videoLayers.values.joined().first { $0.sender.ssrc == ssrc }
    }

    /// Sender and receiver reports on RFC 3550 timing (`RTCPScheduler`: about once a second,
    /// randomized, libwebrtc's video interval).
    private func scheduleReports() {
        let now = loop.now
        if media.reportSchedule == nil { media.reportSchedule = RTCPScheduler(media: .video, start: now, seed: timingSeeds.next()) }
        guard let deadline = media.reportSchedule?.nextDeadline() else { return }
        media.reportTimer = loop.schedule(at: deadline) { [weak self] in
            guard let self, !self.closed else { return }
            let now = self.loop.now
            if self.media.reportSchedule?.poll(now: now) == true { self.sendReports(now: now) }
            self.scheduleReports()
        }
    }

    /// Audio is reported too: its sender reports are what lets the far end line it up with the
    /// video (RFC 3550 §6.4.1), and its receiver reports give our sender loss and RTT.
    private func sendReports(now: ContinuousClock.Instant) {
        guard let transport, transport.dtlsState == .connected else { return }
        let blocks = media.videoReceive.values.compactMap { $0.receptionReport(now: now) }
            + media.audioReceive.values.compactMap { $0.receptionReport(now: now) }
        let ntp = media.ntp.ntp(at: now)
        let senders = media.allVideoSend.map(\.sender) + media.audioSend.values.map(\.sender)
        let srs = senders.compactMap { $0.statistics.senderReport(now: now, ntp: ntp) }
        let packets = RTCPReportComposer.compound(senderReports: srs, receptionBlocks: blocks,
                                                  reporterSSRC: transceiverList.first?.sender.ssrc, cname: cname)
        guard !packets.isEmpty else { return }
        transport.sendRTCP(RTCPPacket.serializeCompound(packets))
    }

    /// W3C members the media streams add to outbound-rtp / inbound-rtp / remote-inbound-rtp.
    func mediaStats(for t: RtpTransceiver, mid: String, into report: inout StatsReport) {
        if let s = media.videoSend[mid], var o = report.stats["OT\(mid)"] {
            addVideoOutbound(s, into: &o)
            report.add(o)
            // Simulcast: one outbound-rtp per layer, named by its rid (as Chromium reports them).
            for layer in media.videoLayers[mid] ?? [] {
                var l = o
                let name = "\(mid)_\(layer.sender.rid ?? String(layer.sender.ssrc))"
                l.id = "OT\(name)"
                l["ssrc"] = .int(Int(layer.sender.ssrc))
                l["packetsSent"] = .int(layer.sender.stats.packets)
                l["bytesSent"] = .int(layer.sender.stats.bytes)
                addVideoOutbound(layer, into: &l)
                report.add(l)
                // What the receiver's reports say of this layer (each has its own SSRC).
                if let r = remoteInbound(layer.sender.statistics, kind: "video", id: "RI\(name)", localId: l.id) {
                    report.add(r)
                }
            }
            var m = RTCStats(id: "MS\(mid)", type: "media-source")
            m["kind"] = .string("video")
            if let size = t.sender.videoTrack?.lastFrameSize {
                m["width"] = .int(size.width)
                m["height"] = .int(size.height)
            }
            m["frames"] = .int(t.sender.videoTrack?.framesRendered ?? 0)
            report.add(m)
            if let r = remoteInbound(s.sender.statistics, kind: "video", id: "RI\(mid)", localId: "OT\(mid)") { report.add(r) }
        }
        if let s = media.audioSend[mid], var o = report.stats["OT\(mid)"] {
            let c = s.stats
            o["totalSamplesSent"] = .int(c.totalSamplesSent)
            report.add(o)
            // W3C RTCAudioSourceStats: what the track captured, as sent (after processing).
            var m = RTCStats(id: "MS\(mid)", type: "media-source")
            m["kind"] = .string("audio")
            m["audioLevel"] = .double(c.lastLevel)
            m["totalAudioEnergy"] = .double(c.totalEnergy)
            m["totalSamplesDuration"] = .double(Double(c.totalSamplesSent) / 48000)
            report.add(m)
            if let r = remoteInbound(s.sender.statistics, kind: "audio", id: "RI\(mid)", localId: "OT\(mid)") { report.add(r) }
        }
        mediaReceiveStats(mid: mid, into: &report)
    }

    /// What a video stream's encoder adds to its outbound-rtp.
    private func addVideoOutbound(_ s: VideoSendStream, into o: inout RTCStats) {
        if let rid = s.sender.rid, s.sender.otherLayers.isEmpty || !s.sender.simulcastRIDs.isEmpty { o["rid"] = .string(rid) }
        let c = s.stats
        o["framesEncoded"] = .int(c.framesEncoded)
        o["keyFramesEncoded"] = .int(c.keyFramesEncoded)
        o["frameWidth"] = .int(c.frameWidth)
        o["frameHeight"] = .int(c.frameHeight)
        o["totalEncodeTime"] = .double(c.totalEncodeTime.seconds)
        o["nackCount"] = .int(c.nackCount)
        o["pliCount"] = .int(c.pliCount)
        o["firCount"] = .int(c.firCount)
        o["retransmittedPacketsSent"] = .int(c.retransmittedPackets)
        o["targetBitrate"] = .int(c.targetBitrate)
        o["qualityLimitationReason"] = .string(c.bandwidthLimited ? "bandwidth" : "none")
        o["qualityLimitationResolutionChanges"] = .int(c.resolutionChanges)
        o["scalabilityMode"] = .string("L1T\(c.temporalLayers)")
        o["framesDropped"] = .int(c.framesDroppedBusy + c.framesDroppedRate + c.framesDroppedEncoder + c.framesDroppedCongestion)
    }

    private func mediaReceiveStats(mid: String, into report: inout StatsReport) {
        if let s = media.videoReceive[mid], var i = report.stats["IT\(mid)"] {
            let c = s.stats, j = s.jitterStatistics
            i["framesDecoded"] = .int(c.framesDecoded)
            i["keyFramesDecoded"] = .int(c.keyFramesDecoded)
            i["frameWidth"] = .int(c.frameWidth)
            i["frameHeight"] = .int(c.frameHeight)
            i["totalDecodeTime"] = .double(c.totalDecodeTime.seconds)
            i["framesDropped"] = .int(j.framesDropped)
            i["packetsLost"] = .int(Int(j.packetsLost))
            i["jitter"] = .double(j.jitterSeconds)
            i["nackCount"] = .int(c.nackCount)
            i["pliCount"] = .int(c.pliCount)
            i["decodeErrors"] = .int(c.decodeErrors)
            i["freezeCount"] = .int(c.freezes.freezeCount)
            i["totalFreezesDuration"] = .double(c.freezes.totalFreezesDuration.seconds)
            i["totalInterFrameDelay"] = .double(c.freezes.totalInterFrameDelay.seconds)
            i["jitterBufferDelay"] = .double(c.jitterBufferDelay.seconds)
            i["jitterBufferTargetDelay"] = .double(c.jitterBufferTargetDelay.seconds)
            i["jitterBufferEmittedCount"] = .int(c.jitterBufferEmittedCount)
            i["retransmittedPacketsReceived"] = .int(j.retransmissionsReceived)
            // Not in W3C stats: how much later the video plays than the audio captured with it,
            // from both streams' sender reports (libwebrtc logs it as the A/V sync offset).
            if let audio = media.audioReceive.values.first,
               let offset = StreamTiming.offset(video: s.timing, audio: audio.timing) {
                i["avSyncOffset"] = .double(offset)
            }
            report.add(i)
        }
        if let s = media.audioReceive[mid], var i = report.stats["IT\(mid)"] {
            let c = s.stats
            if let r = s.reception {
                i["packetsLost"] = .int(Int(r.cumulativeLost))
                i["jitter"] = .double(r.jitterSeconds)
            }
            i["totalSamplesReceived"] = .int(c.samplesDecoded)
            i["concealedSamples"] = .int(c.samplesConcealed)
            i["removedSamplesForAcceleration"] = .int(c.samplesRemoved)
            i["audioLevel"] = .double(c.lastLevel)
            i["totalAudioEnergy"] = .double(c.totalEnergy)
            i["totalSamplesDuration"] = .double(Double(c.samplesDecoded) / 48000)
            report.add(i)
        }
    }
}

/// W3C remote-inbound-rtp: what the peer's last reception report said about our stream
/// (`localId`: its outbound-rtp).
private func remoteInbound(_ stats: SenderStatistics, kind: String, id: String, localId: String) -> RTCStats? {
    guard let rr = stats.remoteReport else { return nil }
    var r = RTCStats(id: id, type: "remote-inbound-rtp")
    r["ssrc"] = .int(Int(rr.ssrc))
    r["kind"] = .string(kind)
    r["packetsLost"] = .int(Int(rr.cumulativeLost))
    r["fractionLost"] = .double(Double(rr.fractionLost) / 256)
    r["jitter"] = .double(Double(rr.jitter) / Double(stats.clockRate))
    if let rtt = stats.roundTripTime { r["roundTripTime"] = .double(rtt.seconds) }
    r["localId"] = .string(localId)
    return r
}

/// A value behind a lock, for closures that outlive the call that made them.
final class LockedBox<T: Sendable>: Sendable {
    private let value: Locked<T>
    init(_ value: T) { self.value = Locked(value) }
    func update(_ body: (inout T) -> Void) { value.withLock { body(&$0) } }
}

extension NTPClock {
    /// Anchored to the wall clock now.
    static func now() -> NTPClock {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return NTPClock(reference: .now, unixSeconds: Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9)
    }
}
