import Testing
@testable import DTLS
