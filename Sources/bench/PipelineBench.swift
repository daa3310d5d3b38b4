// The publish path at 1280x720@30 in this process: TestPatternCapturer (its own paced thread)
// → VideoSource (processors) → VideoTrack → H.264 (OpenH264) at 1.5 Mbps → RTP packetizer →
// SRTP → UDP to a second PeerConnection on 127.0.0.1 that does not decode (a sink). CPU per frame
// is this process's CPU time over the window, minus the sink's loop thread, minus the idle rate
// measured with both connected and no frames. The same two PeerConnections with a decoding
// receiver give capture→render latency from the wall clock the test pattern carries.
import Capture
import Foundation
import Media
import PeerConnection
import Synchronization
import Transport

let pipelineBitrate = 1_500_000

struct PipelineResult {
    var cpuMsPerFrame: Double
    var frames: Int
    var fps: Double
    var kbps: Double
    var idleCores: Double
    var sinkCores: Double
}

/// Offer/answer between two in-process peers, candidates carried inside the SDP.
func negotiateInProcess(_ offerer: PeerConnection, _ answerer: PeerConnection) async throws {
    try await offerer.setLocalDescription(try await offerer.createOffer())
    await offerer.waitForGatheringComplete(timeout: .seconds(5))
    guard let offer = offerer.localDescription else { throw BenchError("offerer has no local description") }
    try await answerer.setRemoteDescription(offer)
    try await answerer.setLocalDescription(try await answerer.createAnswer())
    await answerer.waitForGatheringComplete(timeout: .seconds(5))
    guard let answer = answerer.localDescription else { throw BenchError("answerer has no local description") }
    try await offerer.setRemoteDescription(answer)
    async let a: Void = offerer.waitConnected(timeout: .seconds(10))
    async let b: Void = answerer.waitConnected(timeout: .seconds(10))
    _ = try await (a, b)
}

/// A sender publishing `track` with H.264 at a fixed 1.5 Mbps, and a receiver; each on its own loop.
final class PublishPair {
    let senderLoop: EventLoop
    let receiverLoop: EventLoop
    let sender: PeerConnection
    let receiver: PeerConnection

    init(track: VideoTrack, receiverDecodes: Bool) async throws {
        senderLoop = try EventLoop(name: "bench-publisher")
        receiverLoop = try EventLoop(name: "bench-sink")
        var config = loopbackConfiguration(answerer: false)
        sender = try PeerConnection(configuration: config, loop: senderLoop)
        config.mediaPipeline = receiverDecodes
        receiver = try PeerConnection(configuration: config, loop: receiverLoop)
        do {
            let t = try await sender.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
            t.sender.replaceTrack(track)
            var p = t.sender.parameters
            p.encodings[0].maxBitrate = pipelineBitrate
            p.encodings[0].minBitrate = pipelineBitrate
            try t.sender.setParameters(p)
            try await negotiateInProcess(sender, receiver)
        } catch {
            await close()
            throw error
        }
    }

    var framesEncoded: Int {
        get async { await sender.getStats().ofType("outbound-rtp").first?.int("framesEncoded") ?? 0 }
    }

    var bytesAtSink: Int { receiver.transceivers.first?.receiver.stats.bytes ?? 0 }

    func close() async {
        await sender.close()
        await receiver.close()
        senderLoop.shutdown()
        receiverLoop.shutdown()
    }
}

/// Process CPU and the sink loop's CPU, sampled together.
private struct CPUSample {
    var process: Double
    var sink: Double
    var wall: Double

    static func take(sink: EventLoop) async -> CPUSample {
        let s = await loopCPUSeconds(sink)
        return CPUSample(process: processCPUSeconds(), sink: s, wall: MonotonicClock.seconds())
    }
}

/// Publishes the test pattern at 1280x720@30 for `seconds` (after `idle` seconds connected without
/// frames and a 1 s warm-up) and returns the CPU per encoded frame of everything but the sink.
func swiftPublishCPU(beauty: Double?, seconds: Double, idle: Double = 1.5) async throws -> PipelineResult {
    let source = VideoSource(processors: ProcessorChain(beauty.map { [BeautyFilter(strength: $0)] } ?? []))
    let track = VideoTrack(id: "bench-video", source: source)
    let pair = try await PublishPair(track: track, receiverDecodes: false)
    let capturer = TestPatternCapturer(delegate: source)
    let measured: Result<PipelineResult, any Error>
    do {
        try await Task.sleep(for: .milliseconds(300))   // connect-time work settles
        let idleStart = await CPUSample.take(sink: pair.receiverLoop)
        try await Task.sleep(for: .seconds(idle))
        let idleEnd = await CPUSample.take(sink: pair.receiverLoop)
        let idleCores = ((idleEnd.process - idleStart.process) - (idleEnd.sink - idleStart.sink)) / (idleEnd.wall - idleStart.wall)

        try capturer.start(width: 1280, height: 720, fps: 30)
        try await Task.sleep(for: .seconds(1))          // encoder set-up, first keyframe
        let framesStart = await pair.framesEncoded, bytesStart = pair.bytesAtSink
        let start = await CPUSample.take(sink: pair.receiverLoop)
        try await Task.sleep(for: .seconds(seconds))
        let end = await CPUSample.take(sink: pair.receiverLoop)
        let framesEnd = await pair.framesEncoded, bytesEnd = pair.bytesAtSink

        let wall = end.wall - start.wall
        let frames = framesEnd - framesStart
        guard frames > 0 else { throw BenchError("no frames encoded in \(seconds) s") }
        let sinkCPU = end.sink - start.sink
        let cpu = (end.process - start.process) - sinkCPU - idleCores * wall
        measured = .success(PipelineResult(cpuMsPerFrame: cpu * 1000 / Double(frames), frames: frames, fps: Double(frames) / wall,
                                           kbps: Double(bytesEnd - bytesStart) * 8 / wall / 1000, idleCores: idleCores,
                                           sinkCores: sinkCPU / wall))
    } catch {
        measured = .failure(error)
    }
    capturer.stop()
    await pair.close()
    return try measured.get()
}

/// Reads the capture wall clock out of every decoded frame.
final class LatencyRenderer: VideoRenderer, Sendable {
    private let state = Mutex<(recording: Bool, latencies: [Double], unreadable: Int)>((false, [], 0))

    func render(_ frame: VideoFrame) {
        let now = realtimeMs32()
        let read = TestPattern.read(frame)
        state.withLock { s in
            guard s.recording else { return }
            if let read {
                s.latencies.append(Double(Int32(bitPattern: now &- read.wallClockMs)))
            } else {
                s.unreadable += 1
            }
        }
    }

    func record(_ on: Bool) { state.withLock { $0.recording = on } }
    var result: (latencies: [Double], unreadable: Int) { state.withLock { ($0.latencies, $0.unreadable) } }
}

/// Test pattern 1280x720@30 → H.264 → loopback → jitter buffer → decoder → renderer: the wall
/// clock written into the pixels at capture against the wall clock at the renderer, per frame.
func captureToRenderLatency(seconds: Double) async throws -> (p50: Double, p99: Double, frames: Int, unreadable: Int) {
    let source = VideoSource()
    let track = VideoTrack(id: "bench-latency", source: source)
    let pair = try await PublishPair(track: track, receiverDecodes: true)
    let capturer = TestPatternCapturer(delegate: source)
    let renderer = LatencyRenderer()
    guard let remote = pair.receiver.transceivers.first?.receiver.videoTrack else {
        await pair.close()
        throw BenchError("the receiver has no video track")
    }
    remote.addRenderer(renderer)
    do {
        try capturer.start(width: 1280, height: 720, fps: 30)
        try await Task.sleep(for: .seconds(1))   // first keyframe, decoder set-up
        renderer.record(true)
        try await Task.sleep(for: .seconds(seconds))
        renderer.record(false)
    } catch {
        capturer.stop()
        await pair.close()
        throw error
    }
    capturer.stop()
    remote.removeRenderer(renderer)
    await pair.close()
    let r = renderer.result
    guard let p50 = percentile(r.latencies, 0.5), let p99 = percentile(r.latencies, 0.99) else {
        throw BenchError("no decoded frame carried a readable test pattern (\(r.unreadable) unreadable)")
    }
    return (p50, p99, r.latencies.count, r.unreadable)
}
