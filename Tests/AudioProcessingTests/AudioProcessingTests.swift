import Testing
@testable import AudioProcessing
