import Media

/// H.264 Annex-B helpers: where the NAL units are, what type they are, and what an SPS says.
/// Encoders use them to check that every IDR carries its parameter sets, decoders to find
/// keyframes, tests to verify the stream.
public enum H264Bitstream {
    public static let nalSPS: UInt8 = 7
    public static let nalPPS: UInt8 = 8
    public static let nalIDR: UInt8 = 5
    public static let nalSlice: UInt8 = 1

    /// Byte ranges of the NAL units (without start codes and trailing zero bytes) in an Annex-B
    /// byte stream. Bytes before the first start code are ignored.
    public static func nalUnitRanges(_ data: UnsafeRawBufferPointer) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        let n = data.count
        var i = 0
        var currentStart: Int? = nil
        while i + 2 < n {
            if data[i] == 0, data[i + 1] == 0, data[i + 2] == 1 {
                if let start = currentStart { ranges.append(start..<trimZeros(data, start, i)) }
                currentStart = i + 3
                i += 3
            } else if data[i + 2] > 1 {
                i += 3   // no start code can begin at i, i+1 or i+2 when byte i+2 is > 1
            } else {
                i += 1
            }
        }
        if let start = currentStart, start < n { ranges.append(start..<trimZeros(data, start, n)) }
        return ranges.filter { !$0.isEmpty }
    }

    public static func nalUnitRanges(_ data: [UInt8]) -> [Range<Int>] {
        data.withUnsafeBytes { nalUnitRanges($0) }
    }

    private static func trimZeros(_ data: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Int {
        var e = end
        while e > start, data[e - 1] == 0 { e -= 1 }
        return e
    }

    /// nal_unit_type of every NAL unit, in stream order.
    public static func nalTypes(_ data: [UInt8]) -> [UInt8] {
        nalUnitRanges(data).map { data[$0.lowerBound] & 0x1F }
    }

    /// Whether the access unit holds an IDR slice.
    public static func containsIDR(_ data: [UInt8]) -> Bool { nalTypes(data).contains(nalIDR) }

    /// The first SPS in the stream, parsed.
    public static func firstSPS(_ data: [UInt8]) throws(MediaError) -> H264SPS? {
        for r in nalUnitRanges(data) where data[r.lowerBound] & 0x1F == nalSPS {
            return try H264SPS(nal: Array(data[r]))
        }
        return nil
    }

    /// Removes emulation-prevention bytes (00 00 03 → 00 00).
    public static func rbsp(_ nal: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(nal.count)
        var zeros = 0
        for b in nal {
            if zeros >= 2 && b == 3 { zeros = 0; continue }
            zeros = b == 0 ? zeros + 1 : 0
            out.append(b)
        }
        return out
    }
}

/// The fields of a sequence parameter set that signaling and tests care about.
public struct H264SPS: Sendable, Equatable {
    public var profileIdc: UInt8
    /// constraint_set0…5 flags as the byte after profile_idc (0xE0 = sets 0, 1, 2).
    public var constraintFlags: UInt8
    public var levelIdc: UInt8
    public var spsID: Int
    /// Picture size after cropping.
    public var width: Int
    public var height: Int

    /// The three bytes of an SDP profile-level-id (e.g. "42e01f").
    public var profileLevelID: String {
        [profileIdc, constraintFlags, levelIdc].map { b in
            let s = String(b, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined()
    }

    /// Constrained baseline: profile_idc 66 with constraint_set1_flag.
    public var isConstrainedBaseline: Bool { profileIdc == 66 && constraintFlags & 0x40 != 0 }

    /// Parses an SPS NAL unit (header byte included, no start code).
    public init(nal: [UInt8]) throws(MediaError) {
        guard let header = nal.first, header & 0x1F == 7 else {
            throw MediaError("H.264 SPS: NAL unit type is \(nal.first.map { $0 & 0x1F }.map(String.init) ?? "missing"), want 7")
        }
        let rbsp = H264Bitstream.rbsp(nal.dropFirst())
        var r = BitReader(rbsp)
        profileIdc = UInt8(try r.bits(8))
        constraintFlags = UInt8(try r.bits(8))
        levelIdc = UInt8(try r.bits(8))
        spsID = try r.ue()
        var chromaFormat = 1
        var separateColourPlane = false
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profileIdc) {
            chromaFormat = try r.ue()
            if chromaFormat == 3 { separateColourPlane = try r.bits(1) == 1 }
            _ = try r.ue()   // bit_depth_luma_minus8
            _ = try r.ue()   // bit_depth_chroma_minus8
            _ = try r.bits(1) // qpprime_y_zero_transform_bypass_flag
            if try r.bits(1) == 1 {   // seq_scaling_matrix_present_flag
                for i in 0..<(chromaFormat != 3 ? 8 : 12) where try r.bits(1) == 1 {
                    try r.skipScalingList(i < 6 ? 16 : 64)
                }
            }
        }
        _ = try r.ue()   // log2_max_frame_num_minus4
        let pocType = try r.ue()
        if pocType == 0 {
            _ = try r.ue()
        } else if pocType == 1 {
            _ = try r.bits(1)
            _ = try r.se()
            _ = try r.se()
            let cycle = try r.ue()
            guard cycle <= 255 else { throw MediaError("H.264 SPS: num_ref_frames_in_pic_order_cnt_cycle \(cycle) > 255") }
            for _ in 0..<cycle { _ = try r.se() }
        }
        _ = try r.ue()       // max_num_ref_frames
        _ = try r.bits(1)    // gaps_in_frame_num_value_allowed_flag
        let widthMbs = try r.ue() + 1
        let heightMapUnits = try r.ue() + 1
        let frameMbsOnly = try r.bits(1) == 1
        if !frameMbsOnly { _ = try r.bits(1) }
        _ = try r.bits(1)    // direct_8x8_inference_flag
        guard widthMbs <= 1024, heightMapUnits <= 1024 else {
            throw MediaError("H.264 SPS: picture size \(widthMbs)x\(heightMapUnits) macroblocks out of range")
        }
        var w = widthMbs * 16
        var h = heightMapUnits * 16 * (frameMbsOnly ? 1 : 2)
        if try r.bits(1) == 1 {   // frame_cropping_flag
            let left = try r.ue(), right = try r.ue(), top = try r.ue(), bottom = try r.ue()
            let cropX = (chromaFormat == 0 || separateColourPlane) ? 1 : (chromaFormat == 3 ? 1 : 2)
            let cropY = ((chromaFormat == 1 && !separateColourPlane) ? 2 : 1) * (frameMbsOnly ? 1 : 2)
            w -= (left + right) * cropX
            h -= (top + bottom) * cropY
            guard w > 0, h > 0 else { throw MediaError("H.264 SPS: cropping leaves no picture") }
        }
        width = w
        height = h
    }
}

/// Reads bits MSB first; running past the end throws.
struct BitReader {
    private let bytes: [UInt8]
    private var pos = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func bits(_ n: Int) throws(MediaError) -> Int {
        var v = 0
        for _ in 0..<n {
            guard pos < bytes.count * 8 else { throw MediaError("H.264 SPS: truncated at bit \(pos)") }
            v = (v << 1) | Int((bytes[pos >> 3] >> (7 - UInt8(pos & 7))) & 1)
            pos += 1
        }
        return v
    }

    /// Exp-Golomb unsigned.
    mutating func ue() throws(MediaError) -> Int {
        var zeros = 0
        while try bits(1) == 0 {
            zeros += 1
            guard zeros <= 31 else { throw MediaError("H.264 SPS: Exp-Golomb code too long at bit \(pos)") }
        }
        return (1 << zeros) - 1 + (try bits(zeros))
    }

    mutating func se() throws(MediaError) -> Int {
        let k = try ue()
        return k & 1 == 1 ? (k + 1) / 2 : -(k / 2)
    }

    mutating func skipScalingList(_ size: Int) throws(MediaError) {
        var last = 8, next = 8
        for _ in 0..<size where next != 0 {
            next = (last + (try se()) + 256) % 256
            last = next == 0 ? last : next
        }
    }
}
