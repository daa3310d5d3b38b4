import Foundation
import SwiftRTC

/// `swiftrtc p2p URL`: the reference app's peer-to-peer call through a signaling server.
enum P2PCommand {
    static let usage = """
    usage: swiftrtc p2p URL [--source testsrc|file:PATH|camera[:ID]] [--size WxH] [--fps N]
                            [--audio tone|file:PATH|mic[:ID]|none] [--audio-processing P] [--speaker ID|none]
                            [--record out.mp4|webm|mkv|y4m] [--snapshot out.png] [--window] [--duration SEC] [--stats-json PATH]
                            [--ice-server URL]... [--ice-username U] [--ice-credential P] [--ice-ca-file PATH]
                            [--ice-transport-policy all|relay] [--insecure] [--token T] [--reconnect on|off]
                            [camera flags]

    A direct call with one other peer: URL is a signaling room, ws[s]://HOST:PORT/rtc/v1/signal/?room=NAME
    (`swiftrtc signal`, or `swiftrtc serve`), with &key=KEY for a room with a key (16-128 of A-Z a-z 0-9
    - _ .; whoever creates the room chooses it, the other peer brings the same; required once the
    server has access control). Whoever joins first offers when the other arrives;
    candidates trickle both ways. Sends our video and audio, plays the peer's (status line, and the
    test-pattern check as in `play`), and opens a data channel "chat": lines typed on stdin are
    sent, the peer's messages are printed as "chat: TEXT" (`restart-ice` restarts ICE by a
    re-offer through the room; the connection re-offers by itself when its path is lost, see
    --reconnect; the audio commands `mute`, `unmute`, `speaker ID|default`,
    `volume 0..1` are taken as commands when there is a microphone or a speaker). Ends on --duration, Ctrl-C, or when the peer hangs up. Exit code 0 only if the
    peer's video was decoded.

      --source S          testsrc (default), file:PATH or camera[:ID] (camera flags as in `publish --help`)
      --size WxH          capture size (default 640x360)      --fps N   (default 30)
      --audio A           tone (default, 660 Hz), file:PATH (WAV), mic[:ID] (`swiftrtc devices`) or none
      --audio-processing P  for mic: all (default), none, or aec,agc,ns,hpf; the echo canceller's
                          reference is what the speaker plays
      --speaker ID|none   where the peer's audio plays (default: the default output if any)
      --record PATH       the peer's stream (.mp4/.webm/.mkv; .y4m raw)       --snapshot PATH   a PNG of it
      --window            the peer's video full size with our preview (SDL2; needs a display)
      --duration SEC      stop after SEC seconds (default: until Ctrl-C or hang-up)
      --stats-json PATH   the final W3C stats and a summary (the keys `play` writes, plus chat counts)
      --insecure          accept any wss certificate (self-signed included); not verified, warned
      --token T           the server's signaling token (--signal-token), sent as Authorization: Bearer
      --reconnect on|off  on (default): ICE restarts through the room when the path is lost (disconnected
                         3 s), and again after a backoff (0.3 s doubling to 7 s) while it stays failed;
                         off: a failed connection ends the call
    \(IceOptions.usage)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc p2p", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let sourceSpec = try a.option("source") ?? "testsrc"
        let camera = CameraOptions.isCamera(sourceSpec) ? try CameraOptions.parse(&a, source: sourceSpec) : nil
        let size = try a.option("size", default: (width: 640, height: 360), parseSize)
        let fps = try a.number("fps", default: 30.0, in: 1...60)
        let audioSpec = try a.option("audio") ?? "tone"
        let processing = try a.option("audio-processing", default: AudioProcessingOptions.all, AudioOptions.parseProcessing)
        let speakerSpec = try a.option("speaker")
        let record = try a.option("record")
        let snapshot = try a.option("snapshot")
        let window = a.flag("window")
        let duration: Double? = try a.number("duration", in: 0.001...maxSeconds)
        let statsPath = try a.option("stats-json")
        let insecure = a.flag("insecure")
        let token = try a.option("token")
        let ice = try IceOptions.parse(&a, command: "swiftrtc p2p")
        let reconnect = try ReconnectOptions.parse(&a)
        let url = try a.positional("URL")
        try a.finish()
        if let speakerSpec, speakerSpec != "none" { try AudioOptions.requireDevice(speakerSpec, .output, command: "swiftrtc p2p") }
        if insecure { printError("swiftrtc p2p: --insecure: the signaling server's certificate is not verified") }

        let source = VideoSource()
        let videoTrack = VideoTrack(id: "p2p-video", source: source)
        let capture = try makeVideoCapturer(sourceSpec, camera: camera, command: "swiftrtc p2p", source: source,
                                            width: size.width, height: size.height, fps: fps)
        let audio = try AudioCapture(audioSpec, processing: processing, tone: (660, 0.2), command: "swiftrtc p2p")
        let speaker = try AudioOptions.startSpeaker(speakerSpec, echo: audio.echo, command: "p2p")
        let preview: SDLWindowRenderer? = window ? try SDLWindowRenderer(title: "swiftrtc p2p — me", width: 320, height: 180) : nil
        if let preview { videoTrack.addRenderer(preview) }
        let playback = try RemotePlayback(record: record, snapshot: snapshot, window: window, title: "swiftrtc p2p — peer")

        var configuration = PeerConnection.Configuration()
        ice.apply(to: &configuration)
        let call = try P2PCall(url: url, configuration: configuration, reconnect: reconnect)
        let started = now()
        try await capture.start()
        try audio.start()
        try await call.start(video: videoTrack, audio: audio.track, insecure: insecure, token: token)
        say("p2p: joined \(url)")
        AudioOptions.startConsole(microphone: audio.microphone, speaker: speaker, command: "p2p")
        StdinCommands.add(first: true) { words, _ in
            guard words == ["restart-ice"] else { return false }
            do {
                try await call.restartIce()
                say("p2p: ICE restart offered")
            } catch {
                printError("swiftrtc p2p: restart-ice: \(error)")
            }
            return true
        }
        let chat = ChatConsole()
        let status = StatusLine()
        let progress = P2PProgress()
        let stopAt = duration.map { started + $0 }
        let interrupted = OnceFlag()
        let waiter = Task { await waitForTermination(); _ = interrupted.fire() }
        let events = Task { [status] in
            for await event in call.events {
                switch event {
                case .joined(let peers):
                    status.say(peers == 0 ? "p2p: waiting for the other peer" : "p2p: the other peer is here; waiting for its offer")
                case .negotiating(let offerer):
                    progress.negotiating(at: (now() - started) * 1000)
                    status.say(offerer ? "p2p: the peer joined; offering" : "p2p: offer received; answering")
                case .remoteTracks(let video, let remoteAudio):
                    playback.attach(video: video, audio: remoteAudio)
                    playback.recorder?.record(receiving: call.peerConnection)
                    if let speaker, let remoteAudio { speaker.add(remoteAudio) }
                case .chatOpen(let channel):
                    status.say("p2p: chat open (type a line to send it)")
                    chat.attach(channel, status: status)
                case .connectionState(let s):
                    if s == .connected, let ms = progress.connected(at: (now() - started) * 1000) {
                        status.say("p2p: connected in \(Int(ms)) ms")
                    }
                case .hungUp(let reason):
                    progress.hungUp = reason
                    status.say("p2p: \(reason)")
                    _ = interrupted.fire()
                case .error(let why):
                    status.say("p2p: \(why)")
                case .recovery(let event):
                    status.say("p2p: \(ReconnectOptions.describe(event))")
                case .signalingReconnecting(let attempt, let why):
                    status.say(attempt == 1 ? "p2p: \(why); rejoining the room" : "p2p: rejoining the room (attempt \(attempt))")
                case .signalingReconnected:
                    status.say("p2p: back in the room; the call went on")
                }
            }
        }
        while !interrupted.isFired {
            if let stopAt, now() >= stopAt { break }
            let state = call.peerConnection.connectionState
            if state == .failed && !reconnect.enabled { break }
            try? await Task.sleep(for: .milliseconds(250))
            let report = await call.peerConnection.getStats()
            status.show(playback.status(report, state: state.rawValue, elapsed: now() - started, stopAt: stopAt))
            try? await Task.sleep(for: .milliseconds(750))
        }
        waiter.cancel()
        status.finish()
        let report = await call.peerConnection.getStats()
        let state = call.peerConnection.connectionState.rawValue
        await call.hangUp()
        events.cancel()
        await capture.stop()
        audio.stop()
        speaker?.stop()
        preview?.close()
        playback.finish()
        let ok = playback.framesDecoded(report) > 0
        say("p2p: " + playback.resultLine(report) + ", chat \(chat.sent) sent / \(chat.received) received")
        if let statsPath {
            var summary = playback.summary(report, connectMs: progress.connectMs ?? 0, started: started, state: state)
            summary["chatSent"] = chat.sent
            summary["chatReceived"] = chat.received
            summary["hungUp"] = progress.hungUp ?? NSNull()
            // From starting the offer (or receiving it) to the first decoded frame of the peer.
            if let first = summary["firstFrameMs"] as? Double, let negotiated = progress.negotiatedMs {
                summary["offerToFirstFrameMs"] = first - negotiated
            }
            if let speaker { summary["playout"] = AudioOptions.json(speaker.stats, device: speaker.device) }
            if let mic = audio.microphone { summary["microphone"] = AudioOptions.json(mic.stats) }
            try writeJSON(summary, to: statsPath)
        }
        return ok ? 0 : 1
    }
}

/// What the event task learns that the summary reports.
final class P2PProgress: @unchecked Sendable {
    // @unchecked: behind `lock`.
    private let lock = NSLock()
    private var connectedMs: Double?
    private var hangUpReason: String?
    private var negotiationMs: Double?
    var connectMs: Double? { lock.withLock { connectedMs } }
    /// When the first offer was started or received (ms since start).
    var negotiatedMs: Double? { lock.withLock { negotiationMs } }
    func negotiating(at ms: Double) { lock.withLock { if negotiationMs == nil { negotiationMs = ms } } }
    var hungUp: String? {
        get { lock.withLock { hangUpReason } }
        set { lock.withLock { hangUpReason = newValue } }
    }
    /// Records the first connection; nil when it was recorded before.
    func connected(at ms: Double) -> Double? {
        lock.withLock {
            guard connectedMs == nil else { return nil }
            connectedMs = ms
            return ms
        }
    }
}

/// Lines typed on stdin go out on the chat channel (after the audio commands had their turn);
/// its messages are printed (as its delegate).
final class ChatConsole: DataChannelDelegate, @unchecked Sendable {
    // @unchecked: the counters, the channel and the status line are behind `lock`.
    private let lock = NSLock()
    private var counts = (sent: 0, received: 0)
    private var channel: DataChannel?
    private var status: StatusLine?
    var sent: Int { lock.withLock { counts.sent } }
    var received: Int { lock.withLock { counts.received } }

    func dataChannel(_ channel: DataChannel, didReceiveMessage message: DataChannelMessage) {
        let status = lock.withLock { () -> StatusLine? in
            counts.received += 1
            return self.status
        }
        status?.say("chat: " + (message.text ?? "<\(message.data.count) bytes>"))
    }

    func dataChannelDidChangeState(_ channel: DataChannel) {}

    func attach(_ channel: DataChannel, status: StatusLine) {
        lock.withLock { self.status = status }
        channel.delegate = self
        let first = lock.withLock { () -> Bool in
            defer { self.channel = channel }
            return self.channel == nil
        }
        guard first else { return }
        StdinCommands.add { [weak self] _, line in
            guard let self, let channel = self.lock.withLock({ self.channel }), channel.readyState == .open else {
                status.say("chat: not sent (the chat is closed)")
                return true
            }
            do {
                try channel.send(line)
                self.lock.withLock { self.counts.sent += 1 }
            } catch {
                status.say("chat: not sent: \(error)")
            }
            return true
        }
    }
}
