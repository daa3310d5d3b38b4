import Testing
@testable import ICE
