/// H.264 NAL unit types this module acts on (ITU-T H.264 table 7-1, RFC 6184 §5.2).
public enum H264NALType {
    public static let slice: UInt8 = 1
    public static let idr: UInt8 = 5
    public static let sei: UInt8 = 6
    public static let sps: UInt8 = 7
    public static let pps: UInt8 = 8
    public static let accessUnitDelimiter: UInt8 = 9
    public static let stapA: UInt8 = 24
    public static let fuA: UInt8 = 28
}

public enum AnnexB {
    /// The NAL units of an Annex-B byte stream as ranges into `data` (start codes excluded,
    /// trailing zero bytes — the leading byte of a 4-byte start code — trimmed, empty units
    /// skipped). Bytes before the first start code are ignored; a buffer without any start code
    /// is taken as one NAL unit.
    public static func nalUnitRanges(_ data: [UInt8]) -> [Range<Int>] {
        var starts: [Int] = []      // index of each "00 00 01"
        data.withUnsafeBufferPointer { p in
            let n = p.count
            var i = 0
            while i + 2 < n {
                let b2 = p[i + 2]
                if b2 > 1 {
                    i += 3
                } else if b2 == 1 && p[i + 1] == 0 && p[i] == 0 {
                    starts.append(i)
                    i += 3
                } else {
                    i += 1
                }
            }
        }
        guard !starts.isEmpty else {
            return data.isEmpty ? [] : [0..<data.count]
        }
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(starts.count)
        for (k, s) in starts.enumerated() {
            let begin = s + 3
            var end = k + 1 < starts.count ? starts[k + 1] : data.count
            while end > begin && data[end - 1] == 0 { end -= 1 }
            if end > begin { ranges.append(begin..<end) }
        }
        return ranges
    }

    public static let startCode: [UInt8] = [0, 0, 0, 1]
}
