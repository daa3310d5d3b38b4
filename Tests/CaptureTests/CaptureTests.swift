import Testing
@testable import Capture
