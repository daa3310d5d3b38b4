import Testing
@testable import RTP
