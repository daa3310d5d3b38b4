import Foundation
import SwiftRTC

/// `--audio tone|file:PATH|mic[:ID]|none` as a track and how to start and stop its capturer.
/// A microphone goes through an `EchoPath` unless processing is `none`; a speaker given the same
/// path (`call`) feeds it the echo canceller's reference.
struct AudioCapture {
    let track: AudioTrack?
    let start: () throws -> Void
    let stop: () -> Void
    let microphone: MicrophoneCapturer?
    let echo: EchoPath?

    init(_ spec: String, processing: AudioProcessingOptions, tone: (frequency: Double, level: Double),
         command: String) throws {
        switch spec {
        case "none":
            (track, start, stop, microphone, echo) = (nil, {}, {}, nil, nil)
        case "tone":
            let capturer = ToneCapturer(frequency: tone.frequency, level: tone.level)
            track = AudioTrack(id: "audio0", source: AudioSource(capturer: capturer))
            (start, stop, microphone, echo) = ({ capturer.start() }, { capturer.stop() }, nil, nil)
        case let spec where spec.hasPrefix("file:"):
            let wav = WAVFileCapturer(path: String(spec.dropFirst(5)), loop: true)
            _ = try wav.fileFormat()
            track = AudioTrack(id: "audio0", source: AudioSource(capturer: wav))
            (start, stop, microphone, echo) = ({ try wav.start() }, { wav.stop() }, nil, nil)
        case let spec where spec == "mic" || spec.hasPrefix("mic:"):
            let echo = processing == .none ? nil : try EchoPath(options: processing)
            let device = spec == "mic" ? nil : String(spec.dropFirst(4))
            try AudioOptions.requireDevice(device, .input, command: command)   // before anything connects
            let mic = MicrophoneCapturer(module: AudioOptions.module, device: device, echo: echo) { event in
                printError("\(command): microphone \(AudioOptions.describe(event))")
            }
            (self.echo, microphone) = (echo, mic)
            track = AudioTrack(id: "audio0", source: AudioSource(capturer: mic))
            (start, stop) = ({ try mic.start() }, { mic.stop() })
        default:
            throw UsageError("\(command): --audio must be tone, file:PATH, mic[:ID] or none, not \"\(spec)\"")
        }
    }
}

/// Microphone and speaker flags: `--audio mic[:ID]`, `--audio-processing`, `--speaker ID|none`,
/// and the stdin commands `mute`, `unmute`, `speaker ID|default`, `volume V`.
enum AudioOptions {
    static let module: any AudioDeviceModule = PulseAudioDeviceModule()

    static let processingHelp = "all (default), none, or a list of aec,agc,ns,hpf"

    /// `--audio-processing all|none|aec,agc,ns,hpf` (echo cancellation, gain, noise, high-pass).
    static func parseProcessing(_ text: String) -> AudioProcessingOptions? {
        switch text {
        case "all": return .all
        case "none": return AudioProcessingOptions.none
        default:
            var o = AudioProcessingOptions.none
            for part in text.split(separator: ",") {
                switch part {
                case "aec": o.echoCancellation = true
                case "agc": o.autoGainControl = true
                case "ns": o.noiseSuppression = true
                case "hpf": o.highPassFilter = true
                default: return nil
                }
            }
            return o
        }
    }

    /// The speaker for `--speaker`: nil spec is the default output when there is one (else it
    /// says so once and plays nothing); "none" plays nothing; an ID must open.
    static func startSpeaker(_ spec: String?, echo: EchoPath?, command: String) throws -> AudioPlayout? {
        if spec == "none" { return nil }
        if spec == nil {
            do {
                guard try module.outputDevices().contains(where: \.isDefault) else {
                    say("\(command): no default audio output; not playing audio (--speaker ID picks one)")
                    return nil
                }
            } catch {
                say("\(command): no audio output (\(error)); not playing audio")
                return nil
            }
        }
        let playout = AudioPlayout(module: module, device: spec, echo: echo) { event in
            printError("\(command): speaker \(describe(event))")
        }
        try playout.start()
        say("\(command): playing audio to \(spec ?? "the default output")")
        return playout
    }

    /// Fails (with what there is) unless the sound server answers and has input/output `id`
    /// (nil: a default one).
    static func requireDevice(_ id: String?, _ kind: AudioDeviceInfo.Kind, command: String) throws {
        let list: [AudioDeviceInfo]
        do {
            list = kind == .input ? try module.inputDevices() : try module.outputDevices()
        } catch {
            throw UsageError("\(command): \(error)")
        }
        let what = kind == .input ? "audio input" : "audio output"
        guard list.contains(where: { id == nil ? $0.isDefault : $0.id == id }) else {
            let known = list.map(\.id).joined(separator: ", ")
            throw UsageError("\(command): no \(what) \(id.map { "\"\($0)\"" } ?? "by default") (there are: \(known.isEmpty ? "none" : known))")
        }
    }

    /// stdin `mute`, `unmute`, `speaker ID|default`, `volume 0..1`.
    static func startConsole(microphone: MicrophoneCapturer?, speaker: AudioPlayout?, command: String) {
        guard microphone != nil || speaker != nil else { return }
        StdinCommands.add(first: true) { words, _ in
            switch (words[0], microphone, speaker) {
            case ("mute", let mic?, _), ("unmute", let mic?, _):
                mic.isMuted = words[0] == "mute"
                say("\(command): microphone \(mic.isMuted ? "muted" : "unmuted")")
            case ("speaker", _, let speaker?):
                guard words.count == 2 else {
                    printError("\(command): speaker needs an output ID or default")
                    return true
                }
                do {
                    try speaker.switchDevice(to: words[1] == "default" ? nil : words[1])
                    say("\(command): playing audio to \(words[1])")
                } catch {
                    printError("\(command): speaker \(words[1]): \(error); still on \(speaker.device ?? "default")")
                }
            case ("volume", _, let speaker?):
                guard words.count == 2, let v = Double(words[1]), (0...1).contains(v) else {
                    printError("\(command): volume needs a number 0…1")
                    return true
                }
                speaker.volume = v
                say("\(command): speaker volume \(fmtNumber(v))")
            default:
                return false
            }
            return true
        }
    }

    static func describe(_ event: AudioDeviceEvent) -> String {
        switch event {
        case .lost(let device, let reason): return "\(device) lost: \(reason); retrying"
        case .recovered(let device): return "\(device) recovered"
        }
    }

    static func json(_ s: MicrophoneCapturer.Stats) -> [String: Any] {
        ["framesCaptured": s.framesCaptured, "deviceDelayMs": s.deviceDelayMs, "deviceLost": s.deviceLost, "level": s.level,
         "framesWithVoice": s.framesWithVoice]
    }

    /// Playout figures for --stats-json.
    static func json(_ s: AudioPlayout.Stats, device: String?) -> [String: Any] {
        let inputs = s.inputs.values
        return ["device": device ?? "default", "framesPlayed": s.framesPlayed, "deviceDelayMs": s.deviceDelayMs,
                "deviceLost": s.deviceLost, "underruns": inputs.reduce(0) { $0 + $1.underruns },
                "samplesDropped": inputs.reduce(0) { $0 + $1.samplesDropped },
                "targetMs": inputs.map(\.targetMs).max() ?? 0, "tracks": inputs.count]
    }
}
