import Testing
@testable import SDP
