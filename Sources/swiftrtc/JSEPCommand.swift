import Foundation
import Locks
import SwiftRTC

/// `swiftrtc jsep`: one PeerConnection driven step by step from stdin, for scripted
/// negotiation tests against another implementation (the script carries the SDP both ways).
enum JSEPCommand {
    static let usage = """
    usage: swiftrtc jsep [--ice-server URL …]

    One PeerConnection, driven by JSON objects on stdin, one a line, each with an "id" and
    an "op"; each gets one line on stdout, `jsep ID: {…}` (a JSON object, with "error" if it
    failed), before the next is read. Runs until SIGINT/SIGTERM. The operations:
      {"op":"addTrack","kind":"video"}        a moving VP8 test pattern (320x240, 30 fps) as
                                              a new track (W3C addTrack); returns its trackId
      {"op":"addTransceiver","kind":K,"direction":D}
      {"op":"stop","mid":M}                   stops the transceiver with mid M
      {"op":"offer"}                          setLocalDescription() as an offer; returns "sdp"
                                              once gathering completed
      {"op":"answer","sdp":OFFER}             applies the remote offer, answers; returns "sdp"
      {"op":"setAnswer","sdp":ANSWER}         applies the remote answer
      {"op":"waitConnected"}                  until connected (15 s at most)
      {"op":"state"}                          signaling and connection state, every transceiver
                                              (mid, kind, directions, trackId, packets, frames decoded)
    \(IceOptions.usage)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc jsep", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let ice = try IceOptions.parse(&a, command: "swiftrtc jsep")
        try a.finish()
        var configuration = PeerConnection.Configuration()
        ice.apply(to: &configuration)
        let session = Session(pc: try PeerConnection(configuration: configuration))
        // One line at a time: the next request waits for this one's reply.
        StdinCommands.add { _, line in
            await session.handle(line)
            return true
        }
        say("jsep: ready")
        await waitForTermination()
        await session.close()
        return 0
    }

    /// Frames decoded on a remote video track.
    final class FrameCounter: VideoRenderer {
        private let count = Locked(0)
        func render(_ frame: VideoFrame) { count.withLock { $0 += 1 } }
        var frames: Int { count.withLock { $0 } }
    }

    actor Session {
        let pc: PeerConnection
        var capturers: [TestPatternCapturer] = []
        var counters: [ObjectIdentifier: FrameCounter] = [:]
        init(pc: PeerConnection) { self.pc = pc }

        /// One request line: its reply line, `jsep ID: {…}`.
        func handle(_ line: String) async {
            var id: Any = NSNull()
            var reply: [String: Any]
            do {
                guard let request = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    throw UsageError("a request must be a JSON object")
                }
                id = request["id"] ?? NSNull()
                reply = try await perform(request)
            } catch {
                reply = ["error": "\(error)"]
            }
            let data = (try? JSONSerialization.data(withJSONObject: reply, options: [.sortedKeys])) ?? Data("{}".utf8)
            say("jsep \(id is NSNull ? "null" : id): " + String(decoding: data, as: UTF8.self))
        }

        func perform(_ request: [String: Any]) async throws -> [String: Any] {
            let op = request["op"] as? String ?? ""
            func string(_ key: String) throws -> String {
                guard let value = request[key] as? String else { throw UsageError("\(op): \"\(key)\" is missing") }
                return value
            }
            func kind() throws -> MediaKind {
                let text = try string("kind")
                guard let kind = MediaKind(rawValue: text) else { throw UsageError("\(op): kind must be audio or video, not \(text)") }
                return kind
            }
            switch op {
            case "addTrack":
                guard try kind() == .video else { throw UsageError("addTrack: only video tracks (a test pattern) here") }
                let source = VideoSource()
                let capturer = TestPatternCapturer(delegate: source)
                try capturer.start(width: 320, height: 240, fps: 30)
                capturers.append(capturer)
                let sender = try await pc.addTrack(VideoTrack(id: "pattern-\(capturers.count)", source: source), codecs: [.vp8])
                return ["trackId": sender.trackId]
            case "addTransceiver":
                let text = request["direction"] as? String ?? "sendrecv"
                guard let direction = TransceiverDirection(rawValue: text) else { throw UsageError("addTransceiver: no direction \(text)") }
                try await pc.addTransceiver(try kind(), TransceiverInit(direction: direction))
                return [:]
            case "stop":
                let mid = try string("mid")
                guard let t = pc.transceivers.first(where: { $0.mid == mid }) else { throw UsageError("stop: no transceiver has mid \(mid)") }
                t.stop()
                return [:]
            case "offer":
                try await pc.setLocalDescription()
                return try await localDescription()
            case "answer":
                try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: try string("sdp")))
                try await pc.setLocalDescription()
                return try await localDescription()
            case "setAnswer":
                try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: try string("sdp")))
                return [:]
            case "waitConnected":
                try await pc.waitConnected(timeout: .seconds(15))
                return [:]
            case "state":
                return state()
            default:
                throw UsageError("unknown op \"\(op)\"")
            }
        }

        func localDescription() async throws -> [String: Any] {
            await pc.waitForGatheringComplete(timeout: .seconds(3))
            guard let d = pc.localDescription else { throw PeerConnectionError(.invalidState, "no local description") }
            return ["type": d.type.rawValue, "sdp": d.sdp]
        }

        func state() -> [String: Any] {
            let rows: [[String: Any]] = pc.transceivers.map { t in
                var counter = counters[ObjectIdentifier(t)]
                if counter == nil, let track = t.receiver.videoTrack {
                    let c = FrameCounter()
                    track.addRenderer(c)
                    counters[ObjectIdentifier(t)] = c
                    counter = c
                }
                return [
                    "mid": t.mid ?? NSNull(), "kind": t.kind.rawValue, "direction": t.direction.rawValue,
                    "currentDirection": t.currentDirection?.rawValue ?? NSNull(), "stopped": t.isStopped,
                    "trackId": t.sender.trackId, "hasTrack": t.sender.videoTrack != nil || t.sender.audioTrack != nil,
                    "packetsSent": t.sender.stats.packets, "packetsReceived": t.receiver.stats.packets,
                    "framesDecoded": counter?.frames ?? 0,
                ]
            }
            return ["signalingState": pc.signalingState.rawValue, "connectionState": pc.connectionState.rawValue,
                    "transceivers": rows]
        }

        func close() async {
            for c in capturers { c.stop() }
            await pc.close()
        }
    }
}
