import SCTP
import Testing

@Suite("DCEP codec (RFC 8832)")
struct DCEPTests {
    @Test("DATA_CHANNEL_OPEN round-trips and matches the RFC layout byte for byte")
    func openLayout() throws {
        let open = DataChannelOpen(channelType: .partialReliableRexmitUnordered, priority: 512, reliabilityParameter: 3,
                                   label: "chat", protocol: "x")
        let bytes = open.bytes
        #expect(bytes == [0x03, 0x81, 0x02, 0x00, 0, 0, 0, 3, 0, 4, 0, 1] + Array("chat".utf8) + Array("x".utf8))
        #expect(try DCEPMessage(parsing: bytes) == .open(open))
    }

    @Test("every channel type and the ACK parse back")
    func channelTypes() throws {
        for type in [DCEPChannelType.reliable, .reliableUnordered, .partialReliableRexmit, .partialReliableRexmitUnordered,
                     .partialReliableTimed, .partialReliableTimedUnordered] {
            let open = DataChannelOpen(channelType: type, reliabilityParameter: 1500, label: "", protocol: "")
            #expect(try DataChannelOpen(parsing: open.bytes) == open)
            #expect(type.ordered == (type.rawValue < 0x80))
        }
        #expect(try DCEPMessage(parsing: [0x02]) == .ack)
        #expect(DCEPMessage.ack.bytes == [0x02])
    }

    @Test("a UTF-8 label of several bytes per character survives")
    func utf8Label() throws {
        let open = DataChannelOpen(channelType: .reliable, label: "чат 💬", protocol: "json")
        #expect(try DataChannelOpen(parsing: open.bytes).label == "чат 💬")
    }

    @Test("truncated, inconsistent or unknown messages are typed errors, not traps")
    func malformed() {
        let good = DataChannelOpen(channelType: .reliable, label: "abc", protocol: "de").bytes
        for cut in 0..<good.count {
            #expect(throws: SCTPError.self) { try DCEPMessage(parsing: Array(good.prefix(cut))) }
        }
        #expect(throws: SCTPError.self) { try DCEPMessage(parsing: [0x07]) }
        var badType = good
        badType[1] = 0x42
        #expect(throws: SCTPError.self) { try DCEPMessage(parsing: badType) }
        var badLabel = good
        badLabel[12] = 0xff
        #expect(throws: SCTPError.self) { try DCEPMessage(parsing: badLabel) }
        var hugeLength = good
        hugeLength[8] = 0xff
        #expect(throws: SCTPError.self) { try DCEPMessage(parsing: hugeLength) }
    }
}
