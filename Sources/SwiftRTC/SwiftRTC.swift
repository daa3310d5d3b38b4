// The umbrella module: `import SwiftRTC` brings the whole public API.
@_exported import PeerConnection
@_exported import Relay
@_exported import Media
@_exported import Signaling
@_exported import Streaming
@_exported import Capture
@_exported import Render
@_exported import Camera
@_exported import AudioDevice
@_exported import AudioProcessing
@_exported import Recording
