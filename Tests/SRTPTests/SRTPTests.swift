import Testing
@testable import SRTP
