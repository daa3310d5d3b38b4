import Foundation
import SwiftRTC

/// Camera commands typed (or piped) on standard input while publishing: one per line.
///   switch [front|back|ID]     another camera, same track (no renegotiation)
///   photo PATH                 a still (.png or .jpg) without stopping the stream
///   fps N                      frame rate while running
///   orientation O              portrait, portrait-upside-down, landscape-left, landscape-right
///   zoom Z | torch on|off|L | iso N | exposure-bias EV | exposure-time MS | white-balance K|auto | focus F
enum CameraConsole {
    static let help = "camera commands on stdin: switch [front|back|ID], photo PATH, fps N, orientation O, zoom Z, torch on|off|L, iso N, exposure-bias EV, exposure-time MS, white-balance K|auto, focus F"

    /// Runs each stdin line on the capturer, in order.
    static func start(_ capturer: CameraCapturer, command: String) {
        StdinCommands.add { words, line in
            do {
                try await run(words, capturer, command: command)
            } catch {
                printError("\(command): camera command \"\(line)\": \(error)")
            }
            return true
        }
    }

    static func run(_ words: [String], _ capturer: CameraCapturer, command: String) async throws {
        switch words[0] {
        case "switch":
            let current = await capturer.currentDevice
            let target: CaptureDevice
            if words.count > 1, let position = CameraPosition(rawValue: words[1]) {
                target = try capturer.device(position: position)
            } else if words.count > 1 {
                target = try capturer.device(id: words[1])
            } else {
                target = try capturer.device(position: current?.position == .front ? .back : .front)
            }
            try await capturer.switchCamera(to: target)
        case "photo":
            guard words.count == 2 else { throw UsageError("photo needs a PATH") }
            guard PhotoFile.isSupported(words[1]) else { throw UsageError("photo PATH must end in .png, .jpg or .jpeg") }
            let photo = try await capturer.takePhoto()
            _ = try PhotoFile.write(photo, to: words[1])
            say("\(command): photo \(words[1]) \(photo.width)x\(photo.height) rotation \(photo.rotation.rawValue)")
        case "fps":
            guard words.count == 2, let fps = Double(words[1]), fps > 0 else { throw UsageError("fps needs a number above 0") }
            let actual = try await capturer.setFrameRate(fps)
            say("\(command): camera frame rate \(fmtNumber(actual)) fps")
        case "orientation":
            guard words.count == 2, let o = parseOrientation(words[1]) else { throw UsageError("orientation needs portrait, portrait-upside-down, landscape-left or landscape-right") }
            await capturer.setDeviceOrientation(o)
            say("\(command): camera rotation \(capturer.frameRotation.rawValue)")
        default:
            // Control settings share the command-line flags' parser: "zoom 2" is "--zoom 2".
            var a = Arguments(command: "camera", ["--" + words[0]] + words.dropFirst(), usage: "")
            let options = try CameraOptions.parse(&a, source: "camera")
            try a.finish()
            guard !options.settings.isEmpty else { throw UsageError("unknown camera command \"\(words[0])\" (\(help))") }
            try await CameraOptions.apply(options.settings, to: capturer, command: command)
        }
    }
}
