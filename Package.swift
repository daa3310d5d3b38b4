// swift-tools-version:6.0
// SwiftRTC: a WebRTC stack in Swift on Debian's C libraries. One protocol per target,
// no upward imports (see ../shared/DESIGN.md).
import PackageDescription

let package = Package(
    name: "SwiftRTC",
    products: [
        .library(name: "SwiftRTC", targets: ["SwiftRTC"]),
        .executable(name: "swiftrtc", targets: ["swiftrtc"]),
    ],
    targets: [
        // C libraries: module maps and a small shim for macros, variadics and callbacks.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2"),
        .target(name: "CShim", dependencies: ["COpenSSL"]),
        .systemLibrary(name: "CYUV"),
        .systemLibrary(name: "COpenH264", pkgConfig: "openh264"),
        .systemLibrary(name: "CVPX", pkgConfig: "vpx"),
        .systemLibrary(name: "COpus", pkgConfig: "opus"),
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat"),
        .systemLibrary(name: "CSDL", pkgConfig: "sdl2"),
        .systemLibrary(name: "CZlib"),
        // usrsctp in AF_CONN mode; the shim wraps its socket options and sendv/recvv structs.
        // No pkgConfig: usrsctp.pc only adds -DINET/-DINET6, which SwiftPM refuses (a warning
        // on every build) and the header does not use.
        .systemLibrary(name: "CUsrSCTP"),
        .systemLibrary(name: "CPulse", pkgConfig: "libpulse-simple"),
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp"),
        // libjpeg reports errors by longjmp: the shim owns the setjmp.
        .target(name: "CJPEG", linkerSettings: [.linkedLibrary("jpeg")]),
        // V4L2's ioctl request numbers and many control ids are macros Swift cannot import.
        .target(name: "CV4L2"),
        // webrtc-audio-processing is C++: a C API over it (SwiftPM drops pkg-config -D flags).
        .target(name: "CAudioProcessing",
                cxxSettings: [.define("WEBRTC_POSIX"), .define("WEBRTC_AUDIO_PROCESSING_ONLY_BUILD"),
                              .unsafeFlags(["-I/usr/include/webrtc_audio_processing", "-std=c++14"])],
                linkerSettings: [.linkedLibrary("webrtc_audio_processing"), .linkedLibrary("stdc++")]),
        // OpenCV's cascade face detector is C++: a C API over it. Debian's OpenCV has no .pc
        // without libopencv-dev (which pulls in every module), so the paths are spelled out.
        .target(name: "CFaceDetect",
                cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4", "-std=c++17"])],
                linkerSettings: [.linkedLibrary("opencv_objdetect"), .linkedLibrary("opencv_imgproc"),
                                 .linkedLibrary("opencv_core"), .linkedLibrary("stdc++")]),

        // One seedable generator for jitter, simulated loss and test data (see its file).
        .target(name: "SeededRandom"),
        // The lock for shared state: one ThreadSanitizer can see (see its file).
        .target(name: "Locks"),

        // Wire formats: pure value types.
        .target(name: "SDP"),
        .target(name: "STUN", dependencies: ["COpenSSL"]),
        .target(name: "RTP"),

        // Sans-I/O protocol state machines.
        .target(name: "ICE", dependencies: ["STUN", "SeededRandom"]),
        .target(name: "TURN", dependencies: ["STUN"]),
        .target(name: "DTLS", dependencies: ["COpenSSL", "CShim"]),
        .target(name: "SRTP", dependencies: ["CSRTP", "COpenSSL"]),
        // Data channels: DCEP and the usrsctp association glue.
        .target(name: "SCTP", dependencies: ["CUsrSCTP", "Locks"]),

        // TLS client: the shared SSL_CTX per trust setting, and a sans-I/O memory-BIO client
        // (TURN over TLS); the HTTP client runs the same sessions over its socket.
        .target(name: "TLS", dependencies: ["COpenSSL", "Locks"]),
        // I/O: HTTP/1.1 server and client over sockets, UDP sockets and the event loop.
        .target(name: "HTTP", dependencies: ["COpenSSL", "TLS", "Locks"]),
        .target(name: "Transport", dependencies: ["STUN", "CShim", "SeededRandom", "Locks"]),
        // WebSocket (RFC 6455), sans-I/O: handshake, frames, messages, closing.
        .target(name: "WebSocket", dependencies: ["COpenSSL"]),

        // Media: frames and the pipeline pieces around them.
        .target(name: "Media", dependencies: ["CYUV", "Locks", "SeededRandom"]),
        .target(name: "Codecs", dependencies: ["Media", "COpenH264", "CVPX", "CFFmpeg", "CYUV"]),
        .target(name: "AudioCodecs", dependencies: ["Media", "COpus"]),
        .target(name: "AudioProcessing", dependencies: ["Media", "CAudioProcessing", "CSpeexDSP", "Locks"]),
        .target(name: "RTPMedia", dependencies: ["Media", "RTP"]),
        // Congestion control, sans-I/O: send-side bandwidth estimation (GCC) and the pacer.
        .target(name: "BandwidthEstimation", dependencies: ["RTP"]),
        .target(name: "Capture", dependencies: ["Media", "CFFmpeg", "CYUV", "Locks"]),
        // Microphones and speakers (libpulse on Linux), the playout mixer and the echo path.
        .target(name: "AudioDevice", dependencies: ["Media", "AudioProcessing", "CPulse", "Locks"]),
        .target(name: "Render", dependencies: ["Media", "CZlib", "CSDL", "CYUV", "CJPEG", "Locks"]),
        // Optimized in debug builds too: the synthetic camera paints every pixel in Swift, and
        // unoptimized a 720p frame took 36 ms, more than a frame's time at 30 fps, in the debug
        // builds the tests and interop runs use.
        .target(name: "Camera", dependencies: ["Media", "Capture", "Render", "CV4L2", "CYUV", "CFaceDetect", "Locks"],
                swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),

        // Session and servers.
        .target(name: "PeerConnection", dependencies: ["Locks", "SDP", "STUN", "ICE", "TURN", "TLS", "RTP", "DTLS", "SRTP", "Transport", "SeededRandom",
                                                       "Media", "Codecs", "AudioCodecs", "RTPMedia", "AudioProcessing", "BandwidthEstimation", "SCTP"]),
        .target(name: "Signaling", dependencies: ["HTTP", "WebSocket", "Locks"]),
        .target(name: "Streaming", dependencies: ["Locks", "PeerConnection", "Signaling", "Media", "HTTP", "SDP", "Transport", "SeededRandom"]),
        // Recording sits below the relay: its DVR records what publishers send.
        .target(name: "Recording", dependencies: ["Media", "RTP", "RTPMedia", "Codecs", "Capture", "CFFmpeg", "Locks", "PeerConnection"]),
        .target(name: "Relay", dependencies: ["Locks", "CShim", "PeerConnection", "BandwidthEstimation", "HTTP", "SDP", "RTP", "RTPMedia", "Codecs", "Signaling", "Transport", "STUN", "Recording", "SeededRandom"]),
        .target(name: "SwiftRTC", dependencies: ["PeerConnection", "Relay", "HTTP", "Signaling", "Streaming", "Media", "Capture", "Render", "Camera",
                                                 "AudioDevice", "AudioProcessing", "Recording"]),
        .executableTarget(name: "swiftrtc", dependencies: ["Locks", "SwiftRTC", "HTTP"]),
        .executableTarget(name: "swiftrtc-fuzz", dependencies: ["SDP", "STUN", "TURN", "RTP", "RTPMedia", "HTTP", "Render", "WebSocket", "SCTP",
                                                        "Transport"]),
        .executableTarget(name: "swiftrtc-bench", dependencies: ["PeerConnection", "SRTP", "CSRTP", "Transport", "STUN", "RTP",
                                                         "Media", "Codecs", "Capture", "HTTP", "Camera", "Render", "CFFmpeg",
                                                         "AudioCodecs", "AudioProcessing", "AudioDevice", "Recording", "RTPMedia"], path: "Sources/bench"),

        // What the test targets share: waiting on events (never on time), hex, temporary
        // directories. SplitMix64 is the library's own (SeededRandom).
        .target(name: "TestSupport", dependencies: ["SeededRandom"], path: "Tests/TestSupport"),
        // Sessions (peers and a relay) on a simulated loop and a virtual network, for the
        // session layer's tests.
        .target(name: "SessionSupport", dependencies: ["PeerConnection", "Relay", "Transport", "STUN", "HTTP", "Signaling", "Streaming", "SeededRandom"],
                path: "Tests/SessionSupport"),
        // gettimeofday with an offset tests advance: OpenSSL's DTLS timer reads it (see the file).
        .target(name: "CWallClock", path: "Tests/CWallClock"),
        .testTarget(name: "SDPTests", dependencies: ["SDP", "SeededRandom"]),
        .testTarget(name: "STUNTests", dependencies: ["STUN", "SeededRandom", "TestSupport"]),
        .testTarget(name: "RTPTests", dependencies: ["RTP", "SeededRandom", "TestSupport"]),
        .testTarget(name: "ICETests", dependencies: ["ICE", "STUN", "SeededRandom"]),
        .testTarget(name: "TURNTests", dependencies: ["TURN", "STUN", "SeededRandom"]),
        .testTarget(name: "DTLSTests", dependencies: ["DTLS", "SeededRandom", "CWallClock"]),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "COpenSSL", "TestSupport"]),
        .testTarget(name: "SRTPTests", dependencies: ["SRTP", "CSRTP", "SeededRandom", "TestSupport"]),
        .testTarget(name: "SCTPTests", dependencies: ["SCTP", "SeededRandom"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "Signaling", "SeededRandom", "TestSupport", "Locks"]),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket"]),
        .testTarget(name: "SignalingTests", dependencies: ["Signaling", "HTTP", "WebSocket", "TestSupport"]),
        .testTarget(name: "StreamingTests", dependencies: ["Streaming", "PeerConnection", "SeededRandom"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "SeededRandom", "Locks"]),
        .testTarget(name: "RecordingTests", dependencies: ["Recording", "Codecs", "AudioCodecs", "Capture", "Media", "RTP", "RTPMedia", "CFFmpeg", "TestSupport"]),
        .testTarget(name: "CodecsTests", dependencies: ["Codecs", "Media", "Locks"]),
        .testTarget(name: "AudioCodecsTests", dependencies: ["AudioCodecs", "Media", "SeededRandom"]),
        .testTarget(name: "AudioProcessingTests", dependencies: ["AudioProcessing", "Media", "SeededRandom"]),
        .testTarget(name: "AudioDeviceTests", dependencies: ["AudioDevice", "Media", "TestSupport"]),
        .testTarget(name: "BandwidthEstimationTests", dependencies: ["BandwidthEstimation", "RTP", "SeededRandom"]),
        .testTarget(name: "RTPMediaTests", dependencies: ["RTPMedia", "Media", "RTP", "SeededRandom"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "Media", "SeededRandom", "TestSupport"]),
        .testTarget(name: "RenderTests", dependencies: ["Render", "Media", "TestSupport"]),
        .testTarget(name: "CameraTests", dependencies: ["Camera", "Media", "Render", "Capture", "TestSupport", "Locks"]),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "TestSupport"]),
        .testTarget(name: "RelayTests", dependencies: ["SessionSupport", "Locks", "Relay", "PeerConnection", "HTTP", "Transport", "STUN", "SeededRandom", "TestSupport", "Media", "Capture"]),
        .testTarget(name: "PeerConnectionTests", dependencies: ["SessionSupport", "PeerConnection", "BandwidthEstimation", "Relay", "Streaming", "SDP", "HTTP", "Transport", "ICE", "STUN", "RTP",
                                                               "Media", "Capture", "Render", "Camera", "SeededRandom", "TestSupport", "Locks"]),
    ],
    swiftLanguageModes: [.v6]
)
