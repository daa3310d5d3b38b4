/// One picture on its way through the pipeline (W3C/libwebrtc `VideoFrame`).
public struct VideoFrame: Sendable {
    public var buffer: VideoFrameBuffer
    /// Rotation the receiver applies to show it upright.
    public var rotation: VideoRotation
    /// Capture time in nanoseconds on the monotonic clock.
    public var timestampNs: Int64
    /// Faces the camera found in this picture (`Face.bounds` are in the upright picture); nil when
    /// nobody looked, empty when nobody is there. Processors that move pixels move these too.
    public var faces: [Face]?

    public init(buffer: VideoFrameBuffer, rotation: VideoRotation = .r0, timestampNs: Int64, faces: [Face]? = nil) {
        self.buffer = buffer
        self.rotation = rotation
        self.timestampNs = timestampNs
        self.faces = faces
    }

    public var width: Int { buffer.width }
    public var height: Int { buffer.height }
    public var format: PixelFormat { buffer.format }
}

/// PCM audio: 48 kHz, 10 or 20 ms, interleaved.
public struct AudioFrame: Sendable {
    public enum Samples: Sendable {
        case int16([Int16])
        case float([Float])
    }
    public var samples: Samples
    public var sampleRate: Int
    public var channels: Int
    public var timestampNs: Int64

    public init(samples: Samples, sampleRate: Int = 48000, channels: Int = 1, timestampNs: Int64) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
        self.timestampNs = timestampNs
    }

    public var samplesPerChannel: Int {
        switch samples {
        case .int16(let s): return s.count / max(channels, 1)
        case .float(let s): return s.count / max(channels, 1)
        }
    }

    public var durationNs: Int64 { Int64(samplesPerChannel) * 1_000_000_000 / Int64(sampleRate) }

    /// The samples as 16-bit PCM (float is clipped to ±1).
    public var int16Samples: [Int16] {
        switch samples {
        case .int16(let s): return s
        case .float(let f): return f.map { Int16(max(-1, min(1, $0)) * 32767) }
        }
    }

    /// A frame of silence.
    public static func silence(sampleRate: Int = 48000, channels: Int = 1, durationMs: Int = 10, timestampNs: Int64) -> AudioFrame {
        AudioFrame(samples: .int16([Int16](repeating: 0, count: sampleRate / 1000 * durationMs * channels)),
                   sampleRate: sampleRate, channels: channels, timestampNs: timestampNs)
    }
}

/// Where decoded or captured frames end up (iOS SDK `RTCVideoRenderer`).
public protocol VideoRenderer: AnyObject, Sendable {
    func render(_ frame: VideoFrame)
}

public protocol AudioRenderer: AnyObject, Sendable {
    func render(_ frame: AudioFrame)
}

/// What a capturer delivers to (iOS SDK `RTCVideoCapturerDelegate`). A `VideoSource` is one;
/// so is any frame consumer the app puts in between (the reference app's beauty filter).
public protocol VideoCapturerDelegate: AnyObject, Sendable {
    func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame)
}

/// Something that produces frames (camera, file, test pattern).
public protocol VideoCapturer: AnyObject, Sendable {
    var delegate: (any VideoCapturerDelegate)? { get set }
}

/// A step between capturer and source: takes a frame, returns a frame (or nil to drop it).
public protocol VideoProcessor: AnyObject, Sendable {
    func process(_ frame: VideoFrame) -> VideoFrame?
}

/// Something that produces audio (microphone, file, tone).
public protocol AudioCapturer: AnyObject, Sendable {
    /// Every 10 or 20 ms frame, on the capturer's thread (an `AudioSource` takes it over). The
    /// data path, not an event: a closure per frame, as the video side's is a delegate call
    /// per frame. Events, such as a file's end, go elsewhere (`WAVFileCapturer.events`).
    var onFrame: (@Sendable (AudioFrame) -> Void)? { get set }
}

public struct MediaError: Error, CustomStringConvertible, Sendable, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
