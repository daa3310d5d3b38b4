import Testing
@testable import AudioCodecs
