import Foundation
import HTTP
import Media
import PeerConnection
import RTP
import RTPMedia
import Recording
import Transport

/// One stream's DVR: the publisher's packets (after SRTP and RTX) into a `Recorder`, a new file
/// per publisher session and per segment, the next file tried a while after a failed one.
/// Loop thread only, like its `RelayStream`.
final class StreamRecording: @unchecked Sendable {
    // @unchecked: loop thread only (the recorder's callbacks hop onto the loop).
    let dvr: RelayDVR
    let app: String
    let name: String
    /// Asks the publisher for a keyframe: the stream's one throttled path.
    private let requestKeyframe: @Sendable () -> Void
    private var publisher: (client: String, ip: String, param: String)?
    /// The video codec recorded; nil: none (no video, or one no container takes).
    private var codec: VideoCodecType?
    private var recordsAudio = false
    private var container = RecordingContainer.webm
    private var recorder: Recorder?
    /// Moves with every recorder, so a late callback of a closed one is ignored.
    private var generation = 0
    /// The file being written.
    private(set) var file: String?
    /// When the segment is due: the file is cut at the next keyframe from then.
    private var cutAt: ContinuousClock.Instant?
    private var cutRequested = false
    /// Why recording stopped, while it waits to retry; nil when all is well.
    private(set) var failure: String?
    private var retryAt: ContinuousClock.Instant?
    private var lastPath: String?

    init(dvr: RelayDVR, app: String, name: String, requestKeyframe: @escaping @Sendable () -> Void) {
        self.dvr = dvr
        self.app = app
        self.name = name
        self.requestKeyframe = requestKeyframe
    }

    var id: String { "\(app)/\(name)" }
    /// A file is open and nothing has failed.
    var active: Bool { recorder != nil && failure == nil }

    /// A new publisher session: the current file (a previous publisher's) ends.
    func start(_ session: RelaySession, video: RtpCodecParameters?, audio: RtpCodecParameters?) {
        stop()
        publisher = (session.id, HTTPServer.ipAddress(of: session.remoteAddress), session.param)
        codec = video.flatMap { VideoCodecType(mimeType: $0.mimeType) }
        if let video, codec == nil { dvr.log("serve: recording \(id) without video: \(video.mimeType) is not recorded") }
        recordsAudio = audio?.mimeType.lowercased() == "audio/opus"
        container = Self.container(for: codec, requested: dvr.options.format)
        if let requested = dvr.options.format, requested != container, let codec {
            dvr.log("serve: --record-format \(requested.rawValue) cannot hold \(codec.rawValue): recording \(id) as .\(container.rawValue)")
        }
        failure = nil
        retryAt = nil
    }

    /// The publisher left: its file ends.
    func stop() {
        closeCurrent()
        publisher = nil
    }

    static func container(for codec: VideoCodecType?, requested: RecordingContainer?) -> RecordingContainer {
        guard let codec else { return requested ?? .webm }   // audio only: any of them holds Opus
        if let requested { return requested.supports(codec) ? requested : .mkv }
        return codec == .h264 ? .mp4 : .webm
    }

    // MARK: packets (the forwarding path: keep it to a compare and the recorder's enqueue)

    func video(_ packet: RTPPacket, now: ContinuousClock.Instant) {
        guard let codec else { return }
        if recorder == nil || cutAt.map({ now >= $0 }) == true {
            guard rotate(packet, codec: codec, now: now) else { return }
        }
        recorder?.video(packet, codec: codec, arrival: now)
    }

    func audio(_ packet: RTPPacket, now: ContinuousClock.Instant) {
        guard recordsAudio else { return }
        if recorder == nil {
            guard mayOpen(now) else { return }
            open(now)
        }
        recorder?.audio(packet, arrival: now)
    }

    /// A new file waits for the next reports (about a second; its samples are held meanwhile):
    /// handing it the last ones at once made its timeline start before the first video frame
    /// was complete, with audio only.
    func senderReport(_ report: SenderReport, video: Bool) {
        recorder?.senderReport(report, video: video)
    }

    /// A video packet when no file is open or a cut is due. Whether to record it.
    private func rotate(_ packet: RTPPacket, codec: VideoCodecType, now: ContinuousClock.Instant) -> Bool {
        if recorder != nil {
            // The segment is due: the next file must open on a picture, so the cut waits for a
            // keyframe (asked for once: browsers send them only when asked).
            guard VideoPacketInfo(codec: codec, payload: packet.payload).startsKeyframe else {
                if !cutRequested {
                    cutRequested = true
                    requestKeyframe()
                }
                return true
            }
            closeCurrent()
        } else if !mayOpen(now) {
            return false
        }
        open(now)
        return recorder != nil
    }

    private func mayOpen(_ now: ContinuousClock.Instant) -> Bool {
        publisher != nil && retryAt.map { now >= $0 } ?? true
    }

    private func open(_ now: ContinuousClock.Instant) {
        let folder = dvr.folder(app: app, stream: name)
        var path = "\(folder)/\(dvr.stamp(at: now)).\(container.rawValue)"
        var n = 1
        while path == lastPath || FileManager.default.fileExists(atPath: path) {
            n += 1
            path = "\(folder)/\(dvr.stamp(at: now))-\(n).\(container.rawValue)"
        }
        let recorder: Recorder
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            recorder = try Recorder(path: path, inline: dvr.loop.isSimulated)
        } catch {
            failed("cannot create \(folder): \(Self.reason(error))", now: now)
            return
        }
        generation += 1
        let g = generation, loop = dvr.loop
        recorder.onKeyframeNeeded = { [weak self] in
            guard let self else { return }
            loop.execute { if self.generation == g { self.requestKeyframe() } }
        }
        recorder.onError = { [weak self] message in
            guard let self else { return }
            loop.execute { if self.generation == g { self.failed(message, now: loop.now) } }
        }
        self.recorder = recorder
        file = path
        lastPath = path
        cutAt = dvr.options.segment.map { now + $0 }
        cutRequested = false
        if failure != nil { checkResumed(generation: g) }
    }

    /// Ends the open file (its trailer is written off the loop, then the hook is told).
    private func closeCurrent() {
        guard let recorder else { return }
        self.recorder = nil
        generation += 1
        cutAt = nil
        let p = publisher ?? ("", "", "")
        dvr.close(recorder, RecordedFile(app: app, stream: name, path: file ?? "", client: p.client, ip: p.ip, param: p.param))
        file = nil
    }

    /// A write failed: said once (not again while retries fail too); the stream flows on
    /// without a file and a new one is tried after `retryAfter`.
    private func failed(_ message: String, now: ContinuousClock.Instant) {
        if failure == nil {
            dvr.log("serve: recording \(id) failed: \(message); the stream goes on unrecorded, "
                    + "a new file is tried every \(dvr.options.retryAfter.components.seconds) s")
        }
        failure = message
        closeCurrent()
        retryAt = now + dvr.options.retryAfter
    }

    /// After a failure, a retried file counts as resumed once it has been created.
    private func checkResumed(generation g: Int) {
        let loop = dvr.loop
        loop.schedule(at: loop.now + .seconds(1)) { [weak self] in
            guard let self, self.generation == g, let recorder = self.recorder, self.failure != nil else { return }
            let stats = recorder.statistics
            guard stats.started, stats.error == nil else { return self.checkResumed(generation: g) }
            self.failure = nil
            self.retryAt = nil
            self.dvr.log("serve: recording \(self.id) resumed: \(self.file ?? "")")
        }
    }

    private static func reason(_ error: any Error) -> String {
        (error as NSError).localizedFailureReason ?? (error as NSError).localizedDescription
    }
}
