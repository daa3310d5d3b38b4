import Media
import Locks

/// A player's tracks as the app holds them across reconnections: each connection's receivers
/// hand their decoded frames on to these, one call per frame (nothing is held, so a new
/// connection's first frame follows the old one's last).
final class RemoteTracks: Sendable {
    let video: VideoTrack?
    let audio: AudioTrack?
    private let videoForward: VideoForward?
    private let audioForward: AudioForward?

    init(video: Bool, audio: Bool) {
        let videoSource = video ? VideoSource() : nil
        self.video = videoSource.map { VideoTrack(id: "remote-video", source: $0) }
        self.audio = audio ? AudioTrack(id: "remote-audio", source: AudioSource()) : nil
        videoForward = videoSource.map(VideoForward.init)
        audioForward = self.audio.map { AudioForward($0.source) }
    }

    /// Frames arriving on a connection's receiver tracks go on to ours.
    func follow(video: VideoTrack?, audio: AudioTrack?) {
        if let videoForward { video?.addRenderer(videoForward) }
        if let audioForward { audio?.addSink(audioForward) }
    }

    private final class VideoForward: VideoRenderer, Sendable {
        let source: VideoSource
        init(_ source: VideoSource) { self.source = source }
        func render(_ frame: VideoFrame) { source.deliverCapturedFrame(frame) }
    }

    private final class AudioForward: AudioRenderer, Sendable {
        let source: AudioSource
        init(_ source: AudioSource) { self.source = source }
        func render(_ frame: AudioFrame) { source.deliver(frame) }
    }
}
