import Foundation
import SwiftRTC

/// `swiftrtc devices`: the cameras, their formats and their controls; microphones and speakers.
enum DevicesCommand {
    static let usage = """
    usage: swiftrtc devices [--json]

    Lists the cameras (V4L2 devices, then the synthetic front and back cameras) with their
    formats (size, pixel format, frame rates) and controls (ranges, modes), then the audio
    inputs and outputs of the sound server (PulseAudio), the defaults marked.
      --json    the same as JSON (an array of devices; "kind" is videoinput, audioinput or
                audiooutput, as in the W3C enumerateDevices())
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc devices", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let json = a.flag("json")
        try a.finish()
        let devices = try CameraOptions.backend.devices()
        for e in CameraOptions.backend.listingErrors { printError("swiftrtc devices: warning: \(e)") }
        var audio: [AudioDeviceInfo] = []
        do {
            audio = try AudioOptions.module.inputDevices() + AudioOptions.module.outputDevices()
        } catch {
            printError("swiftrtc devices: warning: \(error)")
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let data = try encoder.encode(devices.map { ListedDevice.camera(DeviceJSON($0)) } + audio.map(ListedDevice.audio))
            say(String(decoding: data, as: UTF8.self))
            return 0
        }
        for d in devices {
            say("\(d.id)  \"\(d.name)\"  \(d.position.rawValue)")
            var sizes: [String: [String]] = [:], order: [String] = []
            for f in d.formats {
                let key = f.sizeDescription
                if sizes[key] == nil { order.append(key) }
                sizes[key, default: []].append("\(f.pixelFormat.rawValue) \(f.frameRateRanges.map(\.description).joined(separator: ",")) fps")
            }
            for s in order { say("  \(s): \(sizes[s]!.joined(separator: "; "))") }
            let caps = d.capabilities
            for c in CameraControl.allCases {
                guard let r = caps.ranges[c] else { continue }
                say("  \(c.rawValue): \(fmtNumber(r.min))…\(fmtNumber(r.max))\(r.step > 0 ? " step \(fmtNumber(r.step))" : "") (default \(fmtNumber(r.defaultValue)))")
            }
            func modes<T: RawRepresentable>(_ s: Set<T>) -> String where T.RawValue == String { s.map(\.rawValue).sorted().joined(separator: ", ") }
            if !caps.exposureModes.isEmpty { say("  exposure modes: \(modes(caps.exposureModes))") }
            if !caps.focusModes.isEmpty { say("  focus modes: \(modes(caps.focusModes))") }
            if !caps.whiteBalanceModes.isEmpty { say("  white balance modes: \(modes(caps.whiteBalanceModes))") }
            var poi: [String] = []
            if caps.exposurePointOfInterest { poi.append("exposure") }
            if caps.focusPointOfInterest { poi.append("focus") }
            if !poi.isEmpty { say("  point of interest: \(poi.joined(separator: ", "))") }
        }
        if devices.isEmpty { say("no cameras") }
        for kind in [AudioDeviceInfo.Kind.input, .output] {
            let list = audio.filter { $0.kind == kind }
            say(kind == .input ? "audio inputs:" : "audio outputs:")
            if list.isEmpty { say("  none") }
            for d in list {
                say("  \(d.id)  \"\(d.name)\"  \(d.sampleRate) Hz \(d.channels) ch"
                    + (d.isDefault ? "  (default)" : "") + (d.isMonitor ? "  (monitor)" : ""))
            }
        }
        return 0
    }
}

/// One element of the `--json` array.
private enum ListedDevice: Encodable {
    case camera(DeviceJSON), audio(AudioDeviceInfo)
    func encode(to encoder: any Encoder) throws {
        switch self {
        case .camera(let d): try d.encode(to: encoder)
        case .audio(let d): try d.encode(to: encoder)
        }
    }
}

/// A device as `--json` prints it (controls keyed by name rather than Codable's array-of-pairs
/// encoding of enum-keyed dictionaries).
private struct DeviceJSON: Encodable {
    struct Range: Encodable { var min, max, step, defaultValue: Double }
    var id: String, name: String, position: String
    var kind = "videoinput"
    var formats: [CaptureFormat]
    var controls: [String: Range]
    var exposureModes: [String], focusModes: [String], whiteBalanceModes: [String]
    var exposurePointOfInterest: Bool, focusPointOfInterest: Bool, torch: Bool

    init(_ d: CaptureDevice) {
        id = d.id
        name = d.name
        position = d.position.rawValue
        formats = d.formats
        let c = d.capabilities
        controls = Dictionary(uniqueKeysWithValues: c.ranges.map { ($0.key.rawValue, Range(min: $0.value.min, max: $0.value.max, step: $0.value.step, defaultValue: $0.value.defaultValue)) })
        exposureModes = c.exposureModes.map(\.rawValue).sorted()
        focusModes = c.focusModes.map(\.rawValue).sorted()
        whiteBalanceModes = c.whiteBalanceModes.map(\.rawValue).sorted()
        exposurePointOfInterest = c.exposurePointOfInterest
        focusPointOfInterest = c.focusPointOfInterest
        torch = c.hasTorch
    }
}
