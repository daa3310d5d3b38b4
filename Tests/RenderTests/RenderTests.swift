import Testing
@testable import Render
