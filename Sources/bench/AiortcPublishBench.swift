// aiortc publishing the same test pattern with H.264 at the same bitrate (bench/aiortc_publish.py),
// to the same kind of sink the Swift publisher sends to: a Swift PeerConnection in this process
// that does not decode. The script measures its own CPU (getrusage: every thread of the Python
// process) over its window and prints it; the sink here only answers and counts bytes.
import Foundation
import PeerConnection
import Transport

struct AiortcPublishResult {
    var cpuMsPerFrame: Double
    var sourceMsPerFrame: Double?
    var frames: Int
    var fps: Double
    var kbps: Double
}

func aiortcPublishCPU(python: String, script: String, seconds: Double) async throws -> AiortcPublishResult {
    guard FileManager.default.fileExists(atPath: script) else { throw BenchError("\(script) not found") }
    let child = try ChildProcess(python, [script, "--seconds", String(seconds), "--bitrate", String(pipelineBitrate)],
                                 logPath: benchTempDirectory + "/aiortc_publish.log")
    let loop = try EventLoop(name: "bench-aiortc-sink")
    var config = loopbackConfiguration(answerer: false)
    config.mediaPipeline = false
    let sink = try PeerConnection(configuration: config, loop: loop)
    func finish() async {
        await child.stop(signal: SIGTERM, timeout: .seconds(3))
        await sink.close()
        loop.shutdown()
    }
    do {
        guard let offer = await child.jsonLine(withKey: "offer", timeout: .seconds(60))?["offer"] as? String else {
            throw BenchError("\(script) printed no offer: \(child.logTail())")
        }
        try await sink.setRemoteDescription(SessionDescription(type: .offer, sdp: offer))
        try await sink.setLocalDescription(try await sink.createAnswer())
        await sink.waitForGatheringComplete(timeout: .seconds(5))
        guard let answer = sink.localDescription?.sdp else { throw BenchError("the sink has no answer") }
        let json = try JSONSerialization.data(withJSONObject: ["answer": answer])
        child.writeLine(String(decoding: json, as: UTF8.self))
        guard let result = await child.jsonLine(withKey: "cpu_ms_per_frame", timeout: .seconds(seconds + 40)),
              let cpu = (result["cpu_ms_per_frame"] as? NSNumber)?.doubleValue else {
            throw BenchError("\(script) printed no result: \(child.logTail())")
        }
        let value = { (key: String) in (result[key] as? NSNumber)?.doubleValue }
        await finish()
        return AiortcPublishResult(cpuMsPerFrame: cpu, sourceMsPerFrame: value("source_ms_per_frame"),
                                   frames: Int(value("frames") ?? 0), fps: value("fps") ?? 0, kbps: value("kbps") ?? 0)
    } catch {
        await finish()
        throw error
    }
}
