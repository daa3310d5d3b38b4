// Recording cost: the Recorder fed a received 720p H.264 stream with its Opus audio, as RTP
// (its own jitter buffer, the timeline, libavformat muxing into fragmented MP4 on disk), next
// to forwarding the same packets: the floor's recv + sendmmsg to one receiver, measured in
// the same run. CPU of the whole process (the recorder works on its own queue).
import Capture
import Codecs
import AudioCodecs
import Foundation
import Media
import Recording
import RTP
import RTPMedia

func recordingBenchmarks(seconds: Double = 10) -> [Row] {
    let width = 1280, height = 720
    let settings = VideoEncoderSettings(width: width, height: height, framerate: 30, bitrate: 1_500_000)
    guard let encoder = try? OpenH264Encoder(settings: settings), let opus = try? OpusEncoder() else {
        return [Row("recording.cpu_per_packet", nil, "µs", note: "failed: no encoder")]
    }
    // The stream, made before the clock starts.
    var packets: [(at: Double, video: Bool, packet: RTPPacket)] = []
    var packetizer = H264Packetizer()
    var seq: UInt16 = 0
    let buffer = VideoFrameBuffer(format: .i420, width: width, height: height)
    let frames = Int(seconds * 30)
    for i in 0..<frames {
        TestPattern.render(frameNumber: UInt32(i), wallClockMs: UInt64(i) * 33, width: width, height: height, into: buffer)
        let t = Double(i) / 30
        guard let e = try? encoder.encode(VideoFrame(buffer: buffer, timestampNs: Int64(t * 1e9)), rtpTimestamp: UInt32(i * 3000),
                                          forceKeyframe: i == 0) else { continue }
        for p in packetizer.packetize(e, maxPayloadSize: 1200) {
            packets.append((t, true, RTPPacket(marker: p.marker, payloadType: 102, sequenceNumber: seq, timestamp: e.rtpTimestamp, ssrc: 1, payload: p.bytes)))
            seq &+= 1
        }
    }
    for k in 0..<Int(seconds * 50) {
        let samples = (0..<960).map { n in Int16(8000 * sin(Double(k * 960 + n) * 2 * .pi * 440 / 48000)) }
        guard let data = try? opus.encode(AudioFrame(samples: .int16(samples), timestampNs: Int64(k) * 20_000_000)) else { continue }
        packets.append((Double(k) * 0.02, false, RTPPacket(payloadType: 111, sequenceNumber: UInt16(k), timestamp: UInt32(k * 960), ssrc: 2, payload: data)))
    }
    packets.sort { $0.at < $1.at }
    let videoPackets = packets.filter(\.video).count
    let path = benchTempDirectory + "/recording-bench.mp4"
    guard let recorder = try? Recorder(path: path) else { return [Row("recording.cpu_per_packet", nil, "µs", note: "failed: recorder")] }
    let start = ContinuousClock.now
    let epoch = 3_900_000_000.0
    let cpu0 = processCPUSeconds()
    var nextReport = 0.0
    for p in packets {
        if p.at >= nextReport {
            let ntp = UInt64((epoch + p.at) * 4_294_967_296)
            recorder.senderReport(SenderReport(ssrc: 1, ntpTimestamp: ntp, rtpTimestamp: UInt32(p.at * 90_000), packetCount: 0, octetCount: 0, reports: []), video: true)
            recorder.senderReport(SenderReport(ssrc: 2, ntpTimestamp: ntp, rtpTimestamp: UInt32(p.at * 48_000), packetCount: 0, octetCount: 0, reports: []), video: false)
            nextReport += 1
        }
        let arrival = start + .seconds(p.at)
        if p.video { recorder.video(p.packet, codec: .h264, arrival: arrival) } else { recorder.audio(p.packet, arrival: arrival) }
    }
    let stats = recorder.close()
    let cpu = processCPUSeconds() - cpu0
    var rows: [Row] = []
    let perPacket = cpu * 1e6 / Double(packets.count)
    let note = "720p30 H.264 ~1.5 Mbps + Opus as RTP, \(packets.count) packets (\(videoPackets) video), \(stats.videoFrames)/\(frames) frames written, "
        + "\(stats.bytes / 1000) kB fragmented MP4" + (stats.error.map { "; error: \($0)" } ?? "")
    rows.append(Row("recording.cpu_per_packet", perPacket, "µs", note: note))
    rows.append(Row("recording.cpu_per_frame", cpu * 1e6 / Double(frames), "µs", note: "the same CPU per video frame"))
    let pps = Double(packets.count) / seconds
    if let floor = forwardFloor(destinations: 1, packetsPerSecond: pps, seconds: 2), floor.forwarded > 0 {
        rows.append(Row("recording.forward_floor_per_packet", floor.cpuPerPacketUs, "µs",
                        note: "recv + sendmmsg to one receiver, \(Int(pps)) packets/s, the same run"))
        rows.append(Row("recording.vs_forwarding_one_viewer", perPacket / floor.cpuPerPacketUs, "ratio", target: .atMost(0.1),
                        note: "recording a stream vs forwarding it to one viewer (issue 23's target: 10%)"))
    }
    return rows
}
