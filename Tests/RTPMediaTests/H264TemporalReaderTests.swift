import RTPMedia
import Testing

/// `H264TemporalReader`: non-reference slices (nal_ref_idc 0) are layer 1, every other slice
/// layer 0; frame starts from first_mb_in_slice.
@Suite struct H264TemporalReaderTests {
    /// A single-NAL slice packet with `nri`, starting its picture or not.
    static func slice(nri: UInt8, first: Bool = true, idr: Bool = false) -> [UInt8] {
        [nri << 5 | (idr ? 5 : 1), first ? 0x88 : 0x08, 0x11, 0x22]
    }

    /// FU-A fragments of one slice: start, middle, end.
    static func fragments(nri: UInt8) -> [[UInt8]] {
        [[nri << 5 | 28, 0x80 | 1, 0x88, 0x01], [nri << 5 | 28, 1, 0x55], [nri << 5 | 28, 0x40 | 1, 0x66]]
    }

    static func mark(_ payload: [UInt8]) -> TemporalMark? { payload.withUnsafeBytes { H264TemporalReader.mark($0) } }

    /// OpenH264's L1T3 (nal_ref_idc 3 0 1 0): the top layer is layer 1, each of its frames a sync.
    @Test func openH264sTopLayerIsLayerOne() {
        let keyframe: [[UInt8]] = [[0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xCE], Self.slice(nri: 3, idr: true)]   // STAP-A SPS+PPS, IDR
        var marks = keyframe.compactMap(Self.mark)
        for nri: UInt8 in [0, 1, 0, 3, 0, 1, 0] { marks += Self.fragments(nri: nri).compactMap(Self.mark) }
        let starts = marks.filter(\.startsFrame)
        #expect(starts.map(\.layer) == [0, 0, 1, 0, 1, 0, 1, 0, 1])
        #expect(starts.map(\.sync) == starts.map { $0.layer == 1 })
        #expect(marks.count == 2 + 7 * 3 && marks.filter { !$0.startsFrame }.map(\.layer) == [1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1])
    }

    /// x264's references (nal_ref_idc 2 on P, 3 on IDR) are all layer 0: no layers to leave out.
    @Test func everyReferencePictureIsTheBaseLayer() {
        let marks = [Self.slice(nri: 3, idr: true), Self.slice(nri: 2), Self.slice(nri: 1), Self.slice(nri: 2)].compactMap(Self.mark)
        #expect(marks.map(\.layer) == [0, 0, 0, 0])
    }

    @Test func aSecondSliceOfAPictureStartsNothing() {
        let marks = [Self.slice(nri: 3), Self.slice(nri: 3, first: false), Self.slice(nri: 0), Self.slice(nri: 0, first: false)]
            .compactMap(Self.mark)
        #expect(marks.map(\.startsFrame) == [true, false, true, false])
        #expect(marks.map(\.layer) == [0, 0, 1, 1])
    }

    @Test func whatCarriesNoSliceHasNoLayer() {
        #expect(Self.mark([]) == nil)
        #expect(Self.mark([0x06, 0x05, 0x01]) == nil)             // SEI
        #expect(Self.mark([0x7C, 0x87]) == nil)                   // FU-A cut short
        #expect(Self.mark([0x7C, 0x87, 0x00, 0x01]) == nil)       // FU-A of an SPS
    }
}
