internal import COpus
import Media

/// Opus runs at 48 kHz in WebRTC (RFC 7587 fixes the RTP clock at 48 kHz).
let opusSampleRate = 48000
/// The longest Opus packet: 120 ms.
let opusMaxSamplesPerChannel = 5760

/// libopus's own wording for an error code, with the code.
func opusErrorText(_ code: Int32) -> String {
    "\(String(cString: opus_strerror(code))) (\(code))"
}

extension AudioFrame {
    /// Number of samples in the frame's array, whatever the format.
    var sampleCount: Int {
        switch samples {
        case .int16(let s): return s.count
        case .float(let s): return s.count
        }
    }
}
