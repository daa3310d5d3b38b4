import Testing
@testable import RTPMedia
