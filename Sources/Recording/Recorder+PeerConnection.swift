import Locks
import Media
import PeerConnection
import RTP

extension Recorder {
    /// Records what `pc` receives: its first video and first audio m-line. Takes their
    /// receivers' `onRTP` and `onRTCP` taps (one owner each).
    public func record(receiving pc: PeerConnection) {
        for kind in [MediaKind.video, .audio] {
            guard let t = pc.transceivers.first(where: { $0.kind == kind }) else { continue }
            let codecs = Locked<[UInt8: VideoCodecType?]>([:])
            let isVideo = kind == .video
            t.receiver.onRTP = { [weak self, weak t] packet in
                guard let self else { return }
                guard isVideo else {
                    self.audio(packet)
                    return
                }
                // The payload type's codec, looked up once per type (RTX and RED are not recorded).
                let codec = codecs.withLock { known in
                    if let c = known[packet.payloadType] { return c }
                    let c = (t?.negotiatedCodecs.first { $0.payloadType == packet.payloadType }?.mimeType).flatMap(VideoCodecType.init(mimeType:))
                    known[packet.payloadType] = c
                    return c
                }
                if let codec { self.video(packet, codec: codec) }
            }
            t.receiver.onRTCP = { [weak self] rtcp in
                if case .senderReport(let sr) = rtcp { self?.senderReport(sr, video: isVideo) }
            }
        }
    }

    /// Records what `pc` sends: its first video and audio senders' encoder output, before the
    /// network. Takes their `onEncodedVideo`/`onEncodedAudio` taps.
    public func record(sending pc: PeerConnection) {
        for t in pc.transceivers {
            if t.kind == .video, t.sender.onEncodedVideo == nil {
                t.sender.onEncodedVideo = { [weak self] frame in self?.sent(frame) }
            } else if t.kind == .audio, t.sender.onEncodedAudio == nil {
                t.sender.onEncodedAudio = { [weak self] packet, captureNs in self?.sentAudio(packet, captureTimeNs: captureNs) }
            }
        }
    }
}
