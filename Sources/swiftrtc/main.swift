import Foundation

// swiftrtc: the command-line front of SwiftRTC. Thin: parse arguments, wire the library,
// print progress.
let topUsage = """
usage: swiftrtc <command> [options]    (swiftrtc <command> --help for each)

commands:
  demo     the main job: relay + publish the test pattern + play it back, verified
  call     a video call through a server: publish yourself, play the peer
  serve    the embedded SRS-compatible relay (SRS JSON API, WHIP, WHEP, player page)
  echo     a WHIP-style echo endpoint: your media comes back to you
  signal   a P2P signaling server: WebSocket rooms of two for offer, answer and candidates
  p2p      a peer-to-peer call through a signaling room: video and audio both ways, chat on a data channel
  publish  publish a test pattern, a file or a camera (plus audio) to SRS (webrtc://) or a WHIP URL
  play     play a stream from SRS (webrtc://) or a WHEP URL: record, snapshot, window
  devices  list cameras with their formats and controls (--json)
  photo    take a still from a camera with exposure, ISO, white balance, zoom, torch, focus settings
  probe    offer audio+video to a WHIP-style URL, send raw RTP, report what returns
  jsep     one PeerConnection driven by JSON lines on stdin (scripted negotiation tests)
"""

let argv = Array(CommandLine.arguments.dropFirst())
let code: Int32
do {
    switch argv.first {
    case "demo": code = try await DemoCommand.run(Array(argv.dropFirst()))
    case "call": code = try await CallCommand.run(Array(argv.dropFirst()))
    case "serve": code = try await ServeCommand.run(Array(argv.dropFirst()))
    case "echo": code = try await EchoCommand.run(Array(argv.dropFirst()))
    case "signal": code = try await SignalCommand.run(Array(argv.dropFirst()))
    case "p2p": code = try await P2PCommand.run(Array(argv.dropFirst()))
    case "probe": code = try await ProbeCommand.run(Array(argv.dropFirst()))
    case "jsep": code = try await JSEPCommand.run(Array(argv.dropFirst()))
    case "publish": code = try await PublishCommand.run(Array(argv.dropFirst()))
    case "devices": code = try await DevicesCommand.run(Array(argv.dropFirst()))
    case "photo": code = try await PhotoCommand.run(Array(argv.dropFirst()))
    case "play": code = try await PlayCommand.run(Array(argv.dropFirst()))
    case nil, "--help", "-h", "help":
        say(topUsage)
        code = argv.isEmpty ? 2 : 0
    default:
        printError("swiftrtc: unknown command \"\(argv[0])\"\n" + topUsage)
        code = 2
    }
} catch let error as UsageError {
    printError(error.description + "\n(see --help)")
    code = 2
} catch {
    printError("swiftrtc: \(error)")
    code = 1
}
exit(code)
