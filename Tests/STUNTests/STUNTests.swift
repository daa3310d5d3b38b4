import Testing
@testable import STUN
