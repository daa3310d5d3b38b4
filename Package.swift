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

        // Wire formats: pure value types.
        .target(name: "SDP"),
        .target(name: "STUN", dependencies: ["COpenSSL"]),
        .target(name: "RTP"),

        // Sans-I/O protocol state machines.
        .target(name: "ICE", dependencies: ["STUN"]),
        .target(name: "DTLS", dependencies: ["COpenSSL", "CShim"]),
        .target(name: "SRTP", dependencies: ["CSRTP", "COpenSSL"]),

        // I/O: HTTP/1.1 server and client over sockets, UDP sockets and the event loop.
        .target(name: "HTTP"),
        .target(name: "Transport", dependencies: ["STUN", "CShim"]),

        // Session and servers.
        .target(name: "PeerConnection", dependencies: ["SDP", "STUN", "ICE", "RTP", "DTLS", "SRTP", "Transport"]),
        .target(name: "Relay", dependencies: ["PeerConnection", "HTTP", "SDP", "RTP"]),
        .target(name: "SwiftRTC", dependencies: ["PeerConnection", "Relay", "HTTP"]),
        .executableTarget(name: "swiftrtc", dependencies: ["SwiftRTC", "HTTP"]),
        .executableTarget(name: "swiftrtc-fuzz", dependencies: ["SDP", "STUN", "RTP", "HTTP"]),
        .executableTarget(name: "swiftrtc-bench", dependencies: ["SwiftRTC", "SRTP", "CSRTP", "Transport"], path: "Sources/bench"),

        .testTarget(name: "SDPTests", dependencies: ["SDP"]),
        .testTarget(name: "STUNTests", dependencies: ["STUN"]),
        .testTarget(name: "RTPTests", dependencies: ["RTP"]),
        .testTarget(name: "ICETests", dependencies: ["ICE", "STUN"]),
        .testTarget(name: "DTLSTests", dependencies: ["DTLS"]),
        .testTarget(name: "SRTPTests", dependencies: ["SRTP", "CSRTP"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP"]),
        .testTarget(name: "PeerConnectionTests", dependencies: ["PeerConnection", "Relay", "HTTP", "Transport", "ICE", "STUN", "RTP"]),
    ],
    swiftLanguageModes: [.v6]
)
