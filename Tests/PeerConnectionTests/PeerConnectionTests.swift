import Testing
@testable import PeerConnection
