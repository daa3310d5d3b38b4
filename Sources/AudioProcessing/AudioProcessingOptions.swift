// Echo cancellation, gain control, noise suppression and high-pass filtering of microphone audio
// through webrtc-audio-processing (the reference app's "google 3A" constraints).
internal import CAudioProcessing
import Media
import Synchronization

/// Which parts of the processing run; each maps to one of libwebrtc's `goog*` audio constraints.
public struct AudioProcessingOptions: Sendable, Equatable, Hashable {
    /// `googEchoCancellation`: removes the far-end audio (passed to `processRender`) from capture.
    public var echoCancellation: Bool
    /// `googAutoGainControl`: adaptive digital gain towards -3 dBFS peaks, with a limiter.
    public var autoGainControl: Bool
    /// `googNoiseSuppression`: stationary noise suppression (high aggressiveness).
    public var noiseSuppression: Bool
    /// `googHighpassFilter`: removes DC and rumble below ~80 Hz.
    public var highPassFilter: Bool

    public init(echoCancellation: Bool = true, autoGainControl: Bool = true,
                noiseSuppression: Bool = true, highPassFilter: Bool = true) {
        self.echoCancellation = echoCancellation
        self.autoGainControl = autoGainControl
        self.noiseSuppression = noiseSuppression
        self.highPassFilter = highPassFilter
    }

    /// Everything on: what browsers do for `getUserMedia({audio: true})`.
    public static let all = AudioProcessingOptions()
    /// Everything off: capture audio passes through unchanged.
    public static let none = AudioProcessingOptions(echoCancellation: false, autoGainControl: false,
                                                    noiseSuppression: false, highPassFilter: false)

    /// Reads libwebrtc media constraints (`["googEchoCancellation": "true", …]`), as the iOS SDK's
    /// `RTCMediaConstraints` carries them. A constraint that is absent keeps its value in `base`;
    /// values other than "true"/"false" are ignored.
    public init(constraints: [String: String], base: AudioProcessingOptions = .all) {
        self = base
        func flag(_ key: String) -> Bool? {
            switch constraints[key]?.lowercased() {
            case "true": return true
            case "false": return false
            default: return nil
            }
        }
        if let v = flag("googEchoCancellation") { echoCancellation = v }
        if let v = flag("googAutoGainControl") { autoGainControl = v }
        if let v = flag("googNoiseSuppression") { noiseSuppression = v }
        if let v = flag("googHighpassFilter") { highPassFilter = v }
    }

    var componentBits: UInt32 {
        var bits: UInt32 = 0
        if echoCancellation { bits |= UInt32(CAPM_ECHO_CANCELLATION) }
        if autoGainControl { bits |= UInt32(CAPM_AUTO_GAIN_CONTROL) }
        if noiseSuppression { bits |= UInt32(CAPM_NOISE_SUPPRESSION) }
        if highPassFilter { bits |= UInt32(CAPM_HIGH_PASS_FILTER) }
        return bits
    }
}
