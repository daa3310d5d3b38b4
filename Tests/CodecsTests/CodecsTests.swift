import Testing
@testable import Codecs
