import Media

/// A sound card endpoint as the system names it (W3C `MediaDeviceInfo` of kind audioinput /
/// audiooutput). On PulseAudio `id` is the source or sink name (`spk.monitor`, `spk`).
public struct AudioDeviceInfo: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable { case input = "audioinput", output = "audiooutput" }
    public var id: String
    public var name: String
    public var kind: Kind
    /// The system's default input or output.
    public var isDefault: Bool
    /// A monitor source: what an output plays, offered as an input (PulseAudio `*.monitor`).
    public var isMonitor: Bool
    public var sampleRate: Int
    public var channels: Int

    public init(id: String, name: String, kind: Kind, isDefault: Bool = false, isMonitor: Bool = false,
                sampleRate: Int = 48000, channels: Int = 2) {
        self.id = id
        self.name = name
        self.kind = kind
        self.isDefault = isDefault
        self.isMonitor = isMonitor
        self.sampleRate = sampleRate
        self.channels = channels
    }
}

/// What the pipeline exchanges with a device: 16-bit interleaved PCM in 10 ms frames. The
/// backend resamples to and from the device's own rate.
public struct AudioStreamFormat: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int

    public init(sampleRate: Int = 48000, channels: Int = 1) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public static let mono48k = AudioStreamFormat()

    /// Samples (all channels) in one 10 ms frame.
    public var samplesPer10ms: Int { sampleRate / 100 * channels }

    func validate() throws(AudioDeviceError) {
        guard [8000, 16000, 32000, 44100, 48000].contains(sampleRate) else {
            throw .unsupportedFormat("sample rate \(sampleRate) Hz (8000, 16000, 32000, 44100 or 48000)")
        }
        guard channels == 1 || channels == 2 else { throw .unsupportedFormat("\(channels) channels (1 or 2)") }
    }
}

/// Lost and regained devices, reported on the stream's own thread.
public enum AudioDeviceEvent: Sendable, Equatable {
    /// Reads or writes failed (unplugged, sound server gone); the stream keeps trying to reopen it.
    case lost(device: String, reason: String)
    /// The stream is running again after `lost`.
    case recovered(device: String)
}

/// An open microphone: blocking reads of one 10 ms frame each, on the caller's (audio) thread.
public protocol AudioCaptureStream: AnyObject, Sendable {
    var format: AudioStreamFormat { get }
    /// Fills `samples` (`format.samplesPer10ms` of them) with the next 10 ms, waiting for them.
    func read(into samples: inout [Int16]) throws(AudioDeviceError)
    /// Time from the microphone to `read` returning (the capture side of the echo path), ms.
    func delayMs() -> Int
    func close()
}

/// An open speaker: blocking writes of 10 ms frames, paced by the device's clock.
public protocol AudioPlayoutStream: AnyObject, Sendable {
    var format: AudioStreamFormat { get }
    /// Queues `samples`; blocks while the device's buffer is full (that is the playout clock).
    func write(_ samples: [Int16]) throws(AudioDeviceError)
    /// Time from `write` to the speaker (buffered in the sound server and the device), ms.
    func delayMs() -> Int
    func close()
}

/// The audio device module (libwebrtc `AudioDeviceModule`): lists and opens microphones and
/// speakers. On Linux it is PulseAudio (`PulseAudioDeviceModule`); on iOS
/// `AVAudioEngineDeviceModule` wraps AVAudioEngine's input tap and a source node in the same two
/// stream protocols, with the `AVAudioSession` route (`overrideOutputAudioPort`) as the output
/// device (not compiled on Linux).
public protocol AudioDeviceModule: Sendable {
    func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo]
    func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo]
    /// `device` nil: the system default.
    func openCapture(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioCaptureStream
    func openPlayout(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioPlayoutStream
}
